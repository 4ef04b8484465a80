"""Where the tabletop arm's pose actions can put the grasp centre, as one object that
callers (e.g. steering a policy toward an operator's point) check targets against.

It is the pose action space's x, y, z box (``base_env.POSE_LOW``/``POSE_HIGH``) with the
height narrowed to what the IK reaches (``arm.Z_MIN``/``Z_MAX``), and the arm's
horizontal reach around its base axis (``arm.RADIUS_MIN``/``RADIUS_MAX``): the IK clamps
any target outside it, so the arm would not get there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from . import arm
from .base_env import POSE_HIGH, POSE_LOW


@dataclass(frozen=True)
class Workspace:
    """An x, y, z box (metres, world frame) intersected with a horizontal reach band
    around the arm's base axis (x = y = 0)."""

    low: tuple[float, float, float]
    high: tuple[float, float, float]
    reach: tuple[float, float]

    def contains(self, point: Sequence[float]) -> bool:
        """True when ``point`` (x, y, z) is inside the box and the reach band."""
        x, y, z = (float(v) for v in point)
        in_box = all(lo <= v <= hi for v, lo, hi in zip((x, y, z), self.low, self.high))
        return in_box and self.reach[0] <= math.hypot(x, y) <= self.reach[1]

    def __str__(self) -> str:
        box = ", ".join(f"{axis} in [{lo:g}, {hi:g}]" for axis, lo, hi in zip("xyz", self.low, self.high))
        return f"{box} m, and {self.reach[0]:g} <= hypot(x, y) <= {self.reach[1]:g} m from the arm's base"


TABLETOP_WORKSPACE = Workspace(
    low=(float(POSE_LOW[0]), float(POSE_LOW[1]), max(float(POSE_LOW[2]), arm.Z_MIN)),
    high=(float(POSE_HIGH[0]), float(POSE_HIGH[1]), min(float(POSE_HIGH[2]), arm.Z_MAX)),
    reach=(arm.RADIUS_MIN, arm.RADIUS_MAX),
)
