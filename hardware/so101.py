"""SO-101 follower and leader arms: six Feetech STS3215 servos, IDs 1..6."""

from __future__ import annotations

from typing import Any

from robot_learn.hardware.arm import ArmConfig, ServoArm
from robot_learn.hardware.bus import Motor
from robot_learn.hardware.feetech_bus import FeetechBus
from robot_learn.hardware.robot import JOINT_NAMES
from robot_learn.hardware.safety import SafetyConfig


def so101_motors() -> dict[str, Motor]:
    """Joint name -> Motor, in the sim twin's joint order."""
    return {name: Motor(i + 1, "sts3215") for i, name in enumerate(JOINT_NAMES)}


def so101_follower(port: str, robot_id: str = "default", calibration_dir: str | None = None,
                   safety: SafetyConfig | None = None, **kwargs: Any) -> ServoArm:
    """An SO-101 follower; default safety clips each command to 10 units per step."""
    safety = safety if safety is not None else SafetyConfig(max_relative_step=10.0)
    return ServoArm(ArmConfig("so101_follower", port, so101_motors(), FeetechBus, "follower",
                              robot_id, calibration_dir, safety=safety, **kwargs))


def so101_leader(port: str, robot_id: str = "default", calibration_dir: str | None = None,
                 **kwargs: Any) -> ServoArm:
    """An SO-101 leader (torque off; read by the operator's hand)."""
    return ServoArm(ArmConfig("so101_leader", port, so101_motors(), FeetechBus, "leader",
                              robot_id, calibration_dir, safety=SafetyConfig(watchdog_timeout_s=None), **kwargs))
