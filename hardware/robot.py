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
    returns the action actually sent (after safety clipping)."""

    def connect(self) -> None: ...

    def disconnect(self) -> None: ...

    def get_observation(self) -> dict[str, Any]: ...

    def send_action(self, action: Mapping[str, float] | np.ndarray) -> dict[str, float]: ...
