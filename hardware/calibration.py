"""Joint calibration: homing offset, range of motion and drive mode per motor.

Stored as JSON per robot (`<calibration_dir>/<robot_type>/<robot_id>.json`).
Applied in software, so the servos' EEPROM is never rewritten:

    ticks    = raw - homing_offset                (the middle pose reads resolution/2)
    degrees  = (ticks - resolution/2) * 360 / resolution
    m100_100 = (ticks - range_min) / (range_max - range_min) * 200 - 100
    0_100    = (ticks - range_min) / (range_max - range_min) * 100

`drive_mode = 1` flips the direction (sign in degrees/m100_100, 100 - x in 0_100).
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Mapping

import numpy as np

from robot_learn.hardware.errors import CalibrationError

NORM_MODES = ("degrees", "m100_100", "0_100")
_FIELDS = ("id", "drive_mode", "homing_offset", "range_min", "range_max")
_ID_PATTERN = re.compile(r"[A-Za-z0-9_\-][A-Za-z0-9_.\-]{0,127}")


def default_calibration_dir() -> Path:
    """$ROBOT_LEARN_CALIBRATION_DIR, else ~/.cache/robot_learn/calibration."""
    env = os.environ.get("ROBOT_LEARN_CALIBRATION_DIR")
    return Path(env) if env else Path.home() / ".cache" / "robot_learn" / "calibration"


def check_robot_id(robot_id: str, what: str = "robot id") -> str:
    """Return ``robot_id`` if it is a plain file name (letters, digits, ``_ - .``, not
    starting with a dot); CalibrationError otherwise. It names the calibration file,
    so ``../../x`` or ``a/b`` would write outside the calibration directory."""
    if not _ID_PATTERN.fullmatch(str(robot_id)):
        raise CalibrationError(f"invalid {what} {robot_id!r}: use letters, digits, '_', '-' and '.' "
                               "(not first), e.g. 'left_arm'; it names the calibration file")
    return str(robot_id)


def calibration_path(calibration_dir: str | os.PathLike | None, robot_type: str, robot_id: str) -> Path:
    """Where a robot's calibration lives (always inside ``calibration_dir``)."""
    base = Path(calibration_dir) if calibration_dir is not None else default_calibration_dir()
    return base / check_robot_id(robot_type, "robot type") / f"{check_robot_id(robot_id)}.json"


@dataclass
class MotorCalibration:
    """Calibration of one motor, in raw ticks."""

    id: int
    drive_mode: int
    homing_offset: int
    range_min: int
    range_max: int


def check_norm_mode(mode: str) -> str:
    if mode not in NORM_MODES:
        raise ValueError(f"unknown normalisation mode {mode!r}; valid modes: {', '.join(NORM_MODES)}")
    return mode


def normalize(raw: float, cal: MotorCalibration, mode: str, resolution: int) -> float:
    """Raw ticks -> calibrated value in `mode` units."""
    ticks = raw - cal.homing_offset
    if mode == "degrees":
        value = (ticks - resolution / 2) * 360.0 / resolution
        return -value if cal.drive_mode else value
    span = cal.range_max - cal.range_min
    frac = (ticks - cal.range_min) / span
    if mode == "m100_100":
        value = frac * 200.0 - 100.0
        return -value if cal.drive_mode else value
    if mode == "0_100":
        value = frac * 100.0
        return 100.0 - value if cal.drive_mode else value
    check_norm_mode(mode)
    raise AssertionError


def unnormalize(value: float, cal: MotorCalibration, mode: str, resolution: int) -> int:
    """Calibrated value -> raw ticks, clipped to the recorded range of motion."""
    if mode == "degrees":
        value = -value if cal.drive_mode else value
        ticks = value * resolution / 360.0 + resolution / 2
    elif mode == "m100_100":
        value = -value if cal.drive_mode else value
        ticks = (value + 100.0) / 200.0 * (cal.range_max - cal.range_min) + cal.range_min
    elif mode == "0_100":
        value = 100.0 - value if cal.drive_mode else value
        ticks = value / 100.0 * (cal.range_max - cal.range_min) + cal.range_min
    else:
        check_norm_mode(mode)
        raise AssertionError
    ticks = float(np.clip(ticks, cal.range_min, cal.range_max))
    return int(round(ticks + cal.homing_offset))


def save_calibration(path: str | os.PathLike, calibration: Mapping[str, MotorCalibration]) -> Path:
    """Write calibration JSON (atomically: temp file + rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({n: asdict(c) for n, c in calibration.items()}, indent=2))
    os.replace(tmp, path)
    return path


def load_calibration(path: str | os.PathLike, expected_motors: list[str] | None = None,
                     how_to_create: str = "robot-learn hw calibrate") -> dict[str, MotorCalibration]:
    """Read calibration JSON; a missing, corrupt or incomplete file raises CalibrationError
    naming the file and the command that creates it."""
    path = Path(path)
    hint = f"create it with `{how_to_create}`"
    if not path.exists():
        raise CalibrationError(f"calibration file {path} not found; {hint}")
    try:
        data = json.loads(path.read_text())
        if not isinstance(data, dict):
            raise ValueError("top level is not an object")
        out = {}
        for name, fields in data.items():
            missing = [f for f in _FIELDS if f not in fields]
            if missing:
                raise ValueError(f"motor {name!r} lacks {', '.join(missing)}")
            out[name] = MotorCalibration(**{f: int(fields[f]) for f in _FIELDS})
            if out[name].range_max <= out[name].range_min:
                raise ValueError(f"motor {name!r} has range_max <= range_min")
    except (ValueError, TypeError) as exc:
        raise CalibrationError(f"calibration file {path} is corrupt ({exc}); {hint}") from exc
    if expected_motors is not None:
        absent = [m for m in expected_motors if m not in out]
        if absent:
            raise CalibrationError(f"calibration file {path} has no entry for {', '.join(absent)}; {hint}")
    return out


def record_ranges_of_motion(read_positions: Callable[[], Mapping[str, int]],
                            done: Callable[[], bool], period_s: float = 0.01,
                            max_duration_s: float = 600.0) -> tuple[dict[str, int], dict[str, int]]:
    """Poll positions until `done()` and return the (min, max) seen per motor, in raw ticks.

    `done` is what makes this scriptable: the CLI passes an Enter-key flag, tests a
    function that moves the emulated joints and stops after a scripted sweep."""
    first = dict(read_positions())
    mins, maxs = dict(first), dict(first)
    start = time.monotonic()
    while not done():
        for name, pos in read_positions().items():
            mins[name] = min(mins[name], pos)
            maxs[name] = max(maxs[name], pos)
        if time.monotonic() - start > max_duration_s:
            raise CalibrationError(f"range-of-motion recording did not finish within {max_duration_s:g} s")
        time.sleep(period_s)
    return mins, maxs
