"""The `Robot` protocol shared by real arms and the MuJoCo twin."""

from __future__ import annotations

from typing import Any, Mapping, Protocol, runtime_checkable

import numpy as np

JOINT_NAMES: tuple[str, ...] = (
    "shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll", "gripper")


@runtime_checkable
class Robot(Protocol):
    """Anything that can be connected, observed and commanded.

    `get_observation()` returns joint positions keyed by joint name, `"images"`
    (camera name -> uint8 HxWx3) and `"timestamps"` (monotonic seconds per source).
    `send_action()` accepts a joint-name dict or an array in `JOINT_NAMES` order and
    returns the action actually sent (after safety clipping).

    `observation_spec()` names the per-step observation keys a policy may read, with
    their shapes: `"state"` (the joint positions as an array, in joint order),
    `"images/<camera>"` (`(H, W, 3)`; `-1` where the camera's size is not fixed), and any
    other array key the robot adds (the MuJoCo twin's `"env_state"`, `"objects"`).
    HITL sessions check a policy's keys against it before the first step."""

    def connect(self) -> None: ...

    def disconnect(self) -> None: ...

    def get_observation(self) -> dict[str, Any]: ...

    def send_action(self, action: Mapping[str, float] | np.ndarray) -> dict[str, float]: ...

    def observation_spec(self) -> dict[str, tuple[int, ...]]: ...
