"""Stand-in policies for session tests: real implementations of the actor interface."""

import numpy as np

from robot_learn.loops.operators import pose_of


class HoldPolicy:
    """Proposes to stay where the arm is, gripper open (a policy that never progresses)."""

    def reset(self):
        self.calls = 0

    def act(self, obs):
        self.calls = getattr(self, "calls", 0) + 1
        return np.append(pose_of(obs), 0.0).astype(np.float32)


class NaNPolicy(HoldPolicy):
    """Proposes NaN from step ``bad_from`` on."""

    def __init__(self, bad_from=3):
        self.bad_from = bad_from

    def act(self, obs):
        action = super().act(obs)
        return action * np.nan if self.calls > self.bad_from else action
