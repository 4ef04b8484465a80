"""Koch v1.1 follower (XL430-W250 + XL330-M288) and leader (XL330-M077) arms, IDs 1..6."""

from __future__ import annotations

from typing import Any

from robot_learn.hardware.arm import ArmConfig, ServoArm
from robot_learn.hardware.bus import Motor
from robot_learn.hardware.dynamixel_bus import DynamixelBus
from robot_learn.hardware.robot import JOINT_NAMES
from robot_learn.hardware.safety import SafetyConfig

_FOLLOWER_MODELS = ("xl430-w250", "xl430-w250", "xl330-m288", "xl330-m288", "xl330-m288", "xl330-m288")


def koch_motors(role: str) -> dict[str, Motor]:
    """Joint name -> Motor for a follower or leader."""
    models = _FOLLOWER_MODELS if role == "follower" else ("xl330-m077",) * 6
    return {name: Motor(i + 1, m) for i, (name, m) in enumerate(zip(JOINT_NAMES, models))}


def koch_follower(port: str, robot_id: str = "default", calibration_dir: str | None = None,
                  safety: SafetyConfig | None = None, **kwargs: Any) -> ServoArm:
    """A Koch v1.1 follower; default safety clips each command to 10 units per step."""
    safety = safety if safety is not None else SafetyConfig(max_relative_step=10.0)
    return ServoArm(ArmConfig("koch_follower", port, koch_motors("follower"), DynamixelBus, "follower",
                              robot_id, calibration_dir, safety=safety, **kwargs))


def koch_leader(port: str, robot_id: str = "default", calibration_dir: str | None = None,
                gripper_trigger: float | None = None, trigger_current_ma: int = 40, **kwargs: Any) -> ServoArm:
    """A Koch v1.1 leader; its joints are limp (torque off).

    `gripper_trigger`: if set, the leader's gripper is a spring-loaded trigger. It is held
    at this position (0..100) in current-based position mode with a `trigger_current_ma`
    limit, so the operator squeezes against a weak motor and it springs back when
    released. Every other joint stays limp."""
    hold = {} if gripper_trigger is None else {"gripper": float(gripper_trigger)}
    return ServoArm(ArmConfig("koch_leader", port, koch_motors("leader"), DynamixelBus, "leader",
                              robot_id, calibration_dir, safety=SafetyConfig(watchdog_timeout_s=None),
                              hold_joints=hold, hold_current=trigger_current_ma, **kwargs))
