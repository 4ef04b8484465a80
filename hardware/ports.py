"""Serial port discovery: list ports, check one exists, find an arm's port by unplugging it."""

from __future__ import annotations

import glob
import os
import time
from typing import Callable, Sequence

from robot_learn.hardware.errors import PortNotFoundError, SDKMissingError


def list_ports(patterns: Sequence[str] = ()) -> list[str]:
    """Device paths of the serial ports the OS reports (USB adapters, ttyS, ...), plus
    the existing paths matching any glob in `patterns` (e.g. "/dev/serial/by-id/*",
    whose symlinks dangle once the adapter is gone, or pseudo-terminals)."""
    try:
        from serial.tools import list_ports as _lp
    except ImportError as exc:
        raise SDKMissingError("pyserial is not installed; pip install 'robot-learn[hardware]'") from exc
    found = {p.device for p in _lp.comports()}
    for pattern in patterns:
        # os.path.exists follows symlinks, so a link to an unplugged device is skipped.
        found.update(path for path in glob.glob(pattern) if os.path.exists(path))
    return sorted(found)


def check_port_exists(port: str) -> None:
    """Raise PortNotFoundError naming `port` and listing the ports found, if it does not exist."""
    if not os.path.exists(port):
        found = list_ports()
        raise PortNotFoundError(
            f"serial port {port!r} not found; ports found: {', '.join(found) if found else '(none)'}. "
            f"Run `robot-learn hw find-port` to identify the arm's port.")


def find_port(input_fn: Callable[[str], str] = input,
              list_fn: Callable[[], list[str]] = list_ports, settle_s: float = 0.5) -> str:
    """Identify an adapter's port by asking the operator to unplug it and diffing the port lists."""
    before = set(list_fn())
    input_fn("Unplug the USB cable of the arm's bus adapter, then press Enter. ")
    time.sleep(settle_s)
    after = set(list_fn())
    gone = sorted(before - after)
    if len(gone) != 1:
        raise PortNotFoundError(
            f"could not identify the port: {len(gone)} ports disappeared ({', '.join(gone) or 'none'}); "
            f"ports before: {', '.join(sorted(before)) or '(none)'}")
    input_fn(f"The port is {gone[0]}. Plug the cable back in and press Enter. ")
    return gone[0]
