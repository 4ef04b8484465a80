"""Peg family: insert a peg into a block's hole (forward) / pull it out (reverse)."""

from __future__ import annotations

import numpy as np

from .scene import FIXTURE_HALF, PEG_HALF
from .task_base import FamilyTask


class PegTask(FamilyTask):
    """A square peg, a block with a square hole (6 mm clearance) and a distractor peg."""

    family = "peg"
    templates_forward = (
        "insert the {move} peg into the {target} block",
        "put the {move} peg in the hole of the {target} block",
    )
    templates_reverse = (
        "pull the {move} peg out of the {target} block and stand it on the white square",
        "remove the {move} peg from the {target} block and put it on the white square",
    )
    # The carried peg's bottom must clear the 4 cm block and the 7 cm
    # distractor peg.
    carry_z = 0.14
    goal_tolerance = 0.012
    # Spot: 3 cm between the peg and the block.
    spot_distance = FIXTURE_HALF + PEG_HALF[0] + 0.03

    def rest_z_in_target(self) -> float:
        return PEG_HALF[2] + 0.001  # the hole goes down to the table

    def forward_goal(self, env) -> np.ndarray:
        hpos, _ = env.object_pose("target")
        # Release 5 mm above the table; the walls guide the peg down.
        return np.array([hpos[0], hpos[1], PEG_HALF[2] + 0.005])

    def in_target(self, env) -> bool:
        pos, _ = env.object_pose("move")
        local = self.in_target_frame(env, pos)
        # Inserted at least 2 cm deep (bottom below 2 cm in a 4 cm hole).
        return bool(max(abs(local[0]), abs(local[1])) < 0.012 and pos[2] < PEG_HALF[2] + 0.02)
