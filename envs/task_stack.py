"""Stack family: put cube A on cube B (forward) / take A off B (reverse)."""

from __future__ import annotations

import numpy as np

from .scene import CUBE_HALF
from .task_base import FamilyTask


class StackTask(FamilyTask):
    """Two cubes; the instruction says which one goes on which."""

    family = "stack"
    templates_forward = (
        "put the {move} cube on the {target} cube",
        "stack the {move} cube on top of the {target} cube",
    )
    templates_reverse = (
        "take the {move} cube off the {target} cube and put it on the white square",
        "unstack the {move} cube from the {target} cube onto the white square",
    )
    carry_z = 0.11
    # The spot leaves a gap of 5 cm between the cubes.
    spot_distance = 0.09

    def rest_z_in_target(self) -> float:
        return 3 * CUBE_HALF + 0.001

    def forward_goal(self, env) -> np.ndarray:
        bpos, _ = env.object_pose("target")
        return np.array([bpos[0], bpos[1], bpos[2] + 2 * CUBE_HALF + 0.003])

    def in_target(self, env) -> bool:
        apos, aquat = env.object_pose("move")
        bpos, _ = env.object_pose("target")
        dz = apos[2] - bpos[2]
        return bool(
            np.linalg.norm(apos[:2] - bpos[:2]) < 0.02
            and 2 * CUBE_HALF - 0.006 < dz < 2 * CUBE_HALF + 0.006
            and bpos[2] < CUBE_HALF + 0.005
            and self.tilt(aquat) < 0.2
        )
