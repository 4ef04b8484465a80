"""`ServoArm`: a calibrated, safety-wrapped arm on one servo bus (the shared body of
the SO-101 and Koch drivers). Implements the `Robot` protocol."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from robot_learn.hardware.bus import Motor, ServoBus
from robot_learn.hardware.calibration import (
    MotorCalibration, calibration_path, check_norm_mode, check_robot_id, load_calibration, normalize,
    record_ranges_of_motion, save_calibration, unnormalize,
)
from robot_learn.hardware.cameras import CameraConfig, OpenCVCamera
from robot_learn.hardware.errors import BusNotConnectedError, EStopError, ServoBusError
from robot_learn.hardware.robot import JOINT_NAMES
from robot_learn.hardware.safety import SafetyConfig, SafetyLayer, TorqueGuard
from robot_learn.hardware.watchdog import Watchdog

log = logging.getLogger(__name__)
ROLES = ("follower", "leader")
CURRENT_BASED_POSITION = 5  # Dynamixel X-series Operating_Mode: position control with a current limit


@dataclass
class ArmConfig:
    """Everything needed to drive one arm.

    `norm_mode`: "m100_100" (arm joints -100..100, gripper 0..100) or "degrees"
    (every joint in degrees)."""

    robot_type: str
    port: str
    motors: dict[str, Motor]
    bus_class: type[ServoBus]
    role: str = "follower"
    robot_id: str = "default"
    calibration_dir: str | None = None
    norm_mode: str = "m100_100"
    safety: SafetyConfig = field(default_factory=SafetyConfig)
    cameras: dict[str, CameraConfig] = field(default_factory=dict)
    timeout_ms: float = 20.0
    retries: int = 2
    baudrate: int = 1_000_000
    # Leader only: joints held with torque on at a position (normalised units) under a
    # current limit (mA), so they push back like a spring the operator squeezes
    # against (the Koch leader's gripper trigger). Needs current-based position control.
    hold_joints: dict[str, float] = field(default_factory=dict)
    hold_current: int = 40

    def __post_init__(self) -> None:
        check_robot_id(self.robot_id)  # before any calibration is recorded for it
        if self.role not in ROLES:
            raise ValueError(f"unknown role {self.role!r}; valid roles: {', '.join(ROLES)}")
        if self.hold_joints and self.role != "leader":
            raise ValueError("hold_joints is for leader arms; a follower holds every joint already")
        for joint in self.hold_joints:
            if joint not in self.motors:
                raise ValueError(f"unknown hold joint {joint!r}; valid joints: {', '.join(self.motors)}")
            regs = self.motors[joint].table.registers
            if "Goal_Current" not in regs or "Operating_Mode" not in regs:
                raise ValueError(f"hold joint {joint!r} needs current-based position control, which model "
                                 f"{self.motors[joint].model} lacks (Dynamixel X-series have it)")
        if self.norm_mode not in ("m100_100", "degrees"):
            check_norm_mode(self.norm_mode)
            raise ValueError(f"arm norm_mode must be 'm100_100' or 'degrees', got {self.norm_mode!r}")

    def joint_mode(self, joint: str) -> str:
        if self.norm_mode == "degrees":
            return "degrees"
        return "0_100" if joint == "gripper" else "m100_100"


class ServoArm:
    """A leader or follower arm. Use as a context manager so torque goes off on errors."""

    def __init__(self, config: ArmConfig) -> None:
        self.config = config
        self.joint_names = tuple(config.motors)
        self.bus = config.bus_class(config.port, config.motors, baudrate=config.baudrate,
                                    timeout_ms=config.timeout_ms, retries=config.retries)
        self.safety = SafetyLayer(config.safety)
        self.calibration: dict[str, MotorCalibration] = {}
        self.cameras = {name: OpenCVCamera(c) for name, c in config.cameras.items()}
        self._guard = TorqueGuard(self._disable_torque_quietly)
        self.watchdog: Watchdog | None = None
        self._lock = threading.RLock()

    # -- paths -------------------------------------------------------------------
    @property
    def calibration_file(self):
        return calibration_path(self.config.calibration_dir, self.config.robot_type, self.config.robot_id)

    @property
    def is_connected(self) -> bool:
        return self.bus.is_connected

    @property
    def is_follower(self) -> bool:
        return self.config.role == "follower"

    # -- lifecycle ---------------------------------------------------------------
    def connect(self, require_calibration: bool = True) -> None:
        """Open the bus, check the motors, load calibration and arm the safety layer."""
        self.bus.connect()
        try:
            self._guard.install()
            if require_calibration:
                self.calibration = load_calibration(
                    self.calibration_file, list(self.joint_names),
                    how_to_create=(f"robot-learn hw calibrate --robot {self.config.robot_type} "
                                   f"--port {self.config.port} --id {self.config.robot_id}"))
            self.bus.disable_torque()
            if self.is_follower and require_calibration:
                # Hold where it stands: goal := present before torque comes on.
                self.bus.sync_write("Goal_Position", self.bus.sync_read("Present_Position"))
                self.bus.enable_torque()
                if self.config.safety.watchdog_timeout_s:
                    self.watchdog = Watchdog(self.config.safety.watchdog_timeout_s, self._on_watchdog)
                    self.watchdog.start()
            elif self.config.hold_joints and require_calibration:
                self._hold_leader_joints()
            for cam in self.cameras.values():
                cam.connect()
        except BaseException:
            self.disconnect()
            raise

    def disconnect(self) -> None:
        """Stop the watchdog, turn torque off, close the bus and cameras (idempotent)."""
        if self.watchdog is not None:
            self.watchdog.stop()
            self.watchdog = None
        try:
            if self.bus.is_connected:
                self.bus.disconnect(disable_torque=True)
        except ServoBusError as exc:
            log.error("disconnect: %s", exc)
            self.bus.disconnect(disable_torque=False)
        finally:
            self._guard.uninstall()
            for cam in self.cameras.values():
                cam.disconnect()

    def __enter__(self) -> "ServoArm":
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.disconnect()

    def _hold_leader_joints(self) -> None:
        # Operating_Mode is EEPROM on X-series servos: only writable with torque off (it is, here).
        names = list(self.config.hold_joints)
        for j in names:
            self.bus.write("Operating_Mode", j, CURRENT_BASED_POSITION)
            self.bus.write("Goal_Current", j, self.config.hold_current)
            self.bus.write("Goal_Position", j, unnormalize(
                self.config.hold_joints[j], self.calibration[j], self.config.joint_mode(j),
                self.config.motors[j].table.resolution))
        self.bus.enable_torque(names)

    # -- safety hooks --------------------------------------------------------------
    def _disable_torque_quietly(self) -> None:
        if self.bus.is_connected:
            try:
                self.bus.disable_torque()
            except ServoBusError as exc:
                log.error("could not disable torque: %s", exc)

    def _on_watchdog(self) -> None:
        if self.config.safety.watchdog_action == "disable_torque":
            self._disable_torque_quietly()
        else:
            self.hold()

    def hold(self) -> None:
        """Set every goal to the present position (the arm stops where it is)."""
        with self._lock:
            self.bus.sync_write("Goal_Position", self.bus.sync_read("Present_Position"))

    def estop(self) -> None:
        """Emergency stop: refuse further commands and turn torque off."""
        self.safety.engage_estop()
        self._disable_torque_quietly()

    def release_estop(self) -> None:
        """Clear the e-stop; a follower holds its present pose with torque back on."""
        self.safety.release_estop()
        if self.is_follower and self.bus.is_connected:
            self.hold()
            self.bus.enable_torque()
            if self.watchdog is not None:
                self.watchdog.feed()

    def _guarded(self, fn: Callable[[], Any]) -> Any:
        # Any bus failure during a command turns torque off (best effort) before raising.
        try:
            return fn()
        except ServoBusError:
            self._disable_torque_quietly()
            raise

    # -- Robot protocol ----------------------------------------------------------------
    def read_joints(self) -> dict[str, float]:
        """Present joint positions in normalised units."""
        if not self.calibration:
            raise BusNotConnectedError(f"{self.config.robot_type} is not connected with calibration loaded")
        with self._lock:
            raw = self._guarded(lambda: self.bus.sync_read("Present_Position"))
        return {j: normalize(raw[j], self.calibration[j], self.config.joint_mode(j),
                             self.config.motors[j].table.resolution) for j in self.joint_names}

    def get_observation(self) -> dict[str, Any]:
        """Joint positions by name and as the array `state` (joint order), `images` by
        camera, `timestamps` of each source."""
        t0 = time.monotonic()
        joints = self.read_joints()
        obs: dict[str, Any] = dict(joints)
        obs["state"] = joints_to_array(joints, self.joint_names).astype(np.float32)
        t1 = time.monotonic()
        stamps = {"joints": (t0 + t1) / 2}  # midpoint of the sync read
        images = {}
        for name, cam in self.cameras.items():
            images[name], stamps[name] = cam.read_latest()
        obs["images"] = images
        obs["timestamps"] = stamps
        return obs

    def observation_spec(self) -> dict[str, tuple[int, ...]]:
        """`state` (one entry per joint) and each camera's frame shape (-1: not fixed)."""
        spec: dict[str, tuple[int, ...]] = {"state": (len(self.joint_names),)}
        for name, cam in self.cameras.items():
            spec[f"images/{name}"] = (cam.config.height or -1, cam.config.width or -1, 3)
        return spec

    def get_action(self) -> dict[str, float]:
        """Leader arms: the joint positions to send to a follower."""
        return self.read_joints()

    def _parse_action(self, action: Mapping[str, float] | np.ndarray) -> dict[str, float]:
        if isinstance(action, Mapping):
            unknown = sorted(set(action) - set(self.joint_names))
            if unknown:
                raise ValueError(f"unknown joints {unknown}; valid joints: {', '.join(self.joint_names)}")
            out = {k: float(v) for k, v in action.items()}
        else:
            arr = np.asarray(action, dtype=np.float64).reshape(-1)
            if arr.shape != (len(self.joint_names),):
                raise ValueError(f"action has shape {np.shape(action)}; expected ({len(self.joint_names)},) "
                                 f"in order {', '.join(self.joint_names)}")
            out = dict(zip(self.joint_names, arr.tolist()))
        bad = [k for k, v in out.items() if not np.isfinite(v)]
        if bad:
            raise ValueError(f"action has non-finite values for {', '.join(bad)}")
        return out

    def send_action(self, action: Mapping[str, float] | np.ndarray) -> dict[str, float]:
        """Clip the action through the safety layer, write it as goal positions and
        return what was sent. Refused (EStopError) while the e-stop is engaged."""
        if not self.is_follower:
            raise ValueError(f"{self.config.robot_type} is a leader arm; it takes no actions")
        if self.safety.estopped:
            raise EStopError(f"{self.config.robot_type} e-stop is engaged; call release_estop() first")
        target = self._parse_action(action)
        with self._lock:
            present = self.read_joints()
            safe = self.safety.filter(target, present)
            raw = {j: unnormalize(v, self.calibration[j], self.config.joint_mode(j),
                                  self.config.motors[j].table.resolution) for j, v in safe.items()}
            self._guarded(lambda: self.bus.sync_write("Goal_Position", raw))
        if self.watchdog is not None:
            self.watchdog.feed()
        return safe

    # -- calibration ----------------------------------------------------------------------
    def calibrate(self, input_fn: Callable[[str], str] = input, done: Callable[[], bool] | None = None,
                  drive_modes: Mapping[str, int] | None = None) -> dict[str, MotorCalibration]:
        """Record homing offsets and ranges of motion with torque off, then save them.

        The operator puts the arm in the middle of its range (homing), then moves
        every joint through its range until `done()` (default: Enter pressed)."""
        if not self.bus.is_connected:
            self.connect(require_calibration=False)
        self.bus.disable_torque()
        input_fn(f"Move {self.config.robot_type} to the middle of its range of motion, then press Enter. ")
        middle = self.bus.sync_read("Present_Position")
        offsets = {j: middle[j] - self.config.motors[j].table.resolution // 2 for j in self.joint_names}
        if done is None:
            finished = threading.Event()
            threading.Thread(target=lambda: (input_fn("Move every joint through its full range; "
                                                      "press Enter when done. "), finished.set()),
                             daemon=True).start()
            done = finished.is_set
        mins, maxs = record_ranges_of_motion(lambda: self.bus.sync_read("Present_Position"), done)
        cal = {}
        for j in self.joint_names:
            lo, hi = mins[j] - offsets[j], maxs[j] - offsets[j]
            if hi <= lo:
                raise ServoBusError(f"joint {j!r} did not move during calibration (range {lo}..{hi}); "
                                    f"move it through its full range and try again")
            cal[j] = MotorCalibration(self.config.motors[j].id, int((drive_modes or {}).get(j, 0)),
                                      offsets[j], lo, hi)
        save_calibration(self.calibration_file, cal)
        self.calibration = cal
        return cal


def joints_to_array(joints: Mapping[str, float], names: tuple[str, ...] = JOINT_NAMES) -> np.ndarray:
    """Joint dict -> float32 array in `names` order."""
    return np.array([joints[n] for n in names], dtype=np.float32)
