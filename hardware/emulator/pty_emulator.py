"""`ServoBusEmulator`: N emulated servos behind a pseudo-terminal.

The client (the vendor SDK through pyserial) opens `emulator.port`, the slave
side of an `os.openpty()` pair, exactly as it would open /dev/ttyUSB0. A
background thread reads the master side, parses instruction packets with the
vendor's wire protocol, runs them on the `EmulatedServo`s and writes status
packets back. Faults can be injected per reply: dropped, corrupted checksum,
delayed, or the whole device disconnected (master closed).
"""

from __future__ import annotations

import os
import select
import sys
import threading
import time
import tty
from dataclasses import dataclass
from typing import Iterable

from robot_learn.hardware.control_table import model_table
from robot_learn.hardware.emulator import dynamixel_protocol, feetech_protocol
from robot_learn.hardware.emulator.servo_model import EmulatedServo

PROTOCOLS = {"dynamixel": dynamixel_protocol, "feetech": feetech_protocol}
FAULT_KINDS = ("drop", "corrupt", "delay")
SWITCH_INTERVAL_S = 2e-4


@dataclass
class Fault:
    """A pending fault: applies to the next `count` replies (from `servo_id`, or any)."""

    kind: str
    count: int = 1
    delay_s: float = 0.0
    servo_id: int | None = None


class ServoBusEmulator:
    """Emulated servo bus on a pty; use as a context manager or call start()/stop().

    Args:
        protocol: "dynamixel" (Protocol 2.0) or "feetech" (STS/SCS).
        servos: (id, model name) pairs, e.g. [(1, "sts3215"), (2, "sts3215")].
        tau_s: time constant of the position response when torque is on.
        positions: optional initial positions in ticks, by id.
    """

    def __init__(self, protocol: str, servos: Iterable[tuple[int, str]], tau_s: float = 0.05,
                 positions: dict[int, int] | None = None) -> None:
        if protocol not in PROTOCOLS:
            raise ValueError(f"unknown protocol {protocol!r}; valid protocols: {', '.join(PROTOCOLS)}")
        self.protocol = protocol
        self._proto = PROTOCOLS[protocol]
        positions = positions or {}
        self.servos: dict[int, EmulatedServo] = {
            sid: EmulatedServo(sid, model_table(model), positions.get(sid), tau_s)
            for sid, model in servos}
        for sid, servo in self.servos.items():
            if model_table(servo.table.name).vendor != protocol:
                raise ValueError(f"servo {sid} model {servo.table.name} does not speak {protocol}")
        self._faults: list[Fault] = []
        self._faults_lock = threading.Lock()
        self._master: int | None = None
        self._slave: int | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.port = ""
        self._old_switch: float | None = None
        self.packets_handled = 0
        self.replies_sent = 0

    # -- lifecycle -----------------------------------------------------------
    def start(self) -> "ServoBusEmulator":
        """Open the pty pair and start serving in a daemon thread."""
        self._master, self._slave = os.openpty()
        # Raw mode before any client opens it: no echo, no line discipline edits.
        tty.setraw(self._slave)
        tty.setraw(self._master)
        self.port = os.ttyname(self._slave)
        # The SDK client busy-polls the port while holding the GIL between short
        # select() calls; with the default 5 ms switch interval this thread would
        # wait up to 5 ms to answer. A short interval keeps replies sub-millisecond.
        self._old_switch = sys.getswitchinterval()
        sys.setswitchinterval(min(self._old_switch, SWITCH_INTERVAL_S))
        self._stop.clear()
        self._thread = threading.Thread(target=self._serve, name=f"emulator-{self.protocol}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the thread and close both ends of the pty."""
        self._halt()
        if self._old_switch is not None:
            sys.setswitchinterval(self._old_switch)
            self._old_switch = None

    def __enter__(self) -> "ServoBusEmulator":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- faults --------------------------------------------------------------
    def inject(self, kind: str, count: int = 1, delay_s: float = 0.1, servo_id: int | None = None) -> None:
        """Queue a fault for the next `count` replies: "drop", "corrupt" or "delay"."""
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault {kind!r}; valid faults: {', '.join(FAULT_KINDS)}, "
                             f"or call disconnect()")
        with self._faults_lock:
            self._faults.append(Fault(kind, count, delay_s, servo_id))

    def disconnect(self) -> None:
        """Simulate a pulled cable: close the master side so the client's port breaks."""
        self._halt()

    def _halt(self) -> None:
        """Stop the serving thread, then close both ends of the pty (each at most once)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
            self._thread = None
        for name in ("_master", "_slave"):
            fd = getattr(self, name)
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass  # already closed by whoever held it; the goal (closed) is met
                setattr(self, name, None)

    def _take_fault(self, servo_id: int) -> Fault | None:
        with self._faults_lock:
            for fault in self._faults:
                if fault.servo_id in (None, servo_id):
                    fault.count -= 1
                    if fault.count <= 0:
                        self._faults.remove(fault)
                    return fault
        return None

    # -- serving -------------------------------------------------------------
    def _serve(self) -> None:
        parser = self._proto.Parser()
        master = self._master
        assert master is not None
        while not self._stop.is_set():
            try:
                ready, _, _ = select.select([master], [], [], 0.02)
            except (OSError, ValueError):
                return
            if not ready:
                continue
            try:
                data = os.read(master, 4096)
            except OSError:
                # No client has the slave open (EIO); wait for one.
                time.sleep(0.005)
                continue
            for inst in parser.feed(data):
                self.packets_handled += 1
                for servo_id, reply in self._proto.handle(inst, self.servos):
                    self._send(master, servo_id, reply)

    def _send(self, master: int, servo_id: int, reply: bytes) -> None:
        fault = self._take_fault(servo_id)
        if fault is not None:
            if fault.kind == "drop":
                return
            if fault.kind == "corrupt":
                reply = reply[:-1] + bytes([reply[-1] ^ 0xFF])
            elif fault.kind == "delay":
                time.sleep(fault.delay_s)
        try:
            os.write(master, reply)
            self.replies_sent += 1
        except OSError:
            pass
