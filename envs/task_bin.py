"""Bin family: put a cube into a bin (forward) / take it out (reverse)."""

from __future__ import annotations

import numpy as np

from .scene import BIN_FLOOR, BIN_HEIGHT, BIN_INNER_HALF, BIN_WALL, CUBE_HALF
from .task_base import FamilyTask


class BinTask(FamilyTask):
    """A cube, an open bin and a distractor cube of another colour."""

    family = "bin"
    templates_forward = (
        "put the {move} cube in the {target} bin",
        "place the {move} cube into the {target} bin",
    )
    templates_reverse = (
        "take the {move} cube out of the {target} bin and put it on the white square",
        "move the {move} cube from the {target} bin to the white square",
    )
    carry_z = 0.11
    goal_tolerance = 0.03
    # Spot: 3 cm between the cube and the bin wall.
    spot_distance = BIN_INNER_HALF + BIN_WALL + CUBE_HALF + 0.03

    def rest_z_in_target(self) -> float:
        return BIN_FLOOR + CUBE_HALF + 0.001

    def forward_goal(self, env) -> np.ndarray:
        bpos, _ = env.object_pose("target")
        return np.array([bpos[0], bpos[1], BIN_FLOOR + CUBE_HALF + 0.01])

    def in_target(self, env) -> bool:
        pos, _ = env.object_pose("move")
        local = self.in_target_frame(env, pos)
        inside = max(abs(local[0]), abs(local[1])) < BIN_INNER_HALF - 0.01
        return bool(inside and pos[2] < BIN_HEIGHT)
