"""A scripted stand-in for a policy in simulated console sessions: :class:`StandInPolicy`.

The console runs without a trained policy by default. The stand-in drives with the
task's scripted expert, but in a chosen fraction of episodes it freezes partway
(it proposes to hold still), as a stuck policy would. The stall is what the
session's takeover rule flags, so the console's help queue has real requests to
show. After an operator hands back, the stand-in re-plans from the scene as the
operator left it and drives on (it freezes at most once per episode).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from robot_learn.loops.operators import pose_of, resume_expert


class StandInPolicy:
    """The session's policy interface (``reset``, ``act``) over the scripted expert of
    ``task`` acting on a :class:`~robot_learn.envs.SimRobot`'s env.

    ``freeze_fraction`` of the episodes (drawn per episode from ``seed``) freeze at a
    step drawn uniformly from ``freeze_after`` (inclusive range of env steps).
    """

    observation_keys: tuple[str, ...] = ()  # it reads the simulator, not the observation keys

    def __init__(self, robot: Any, task: str, freeze_fraction: float = 0.5,
                 freeze_after: Sequence[int] = (10, 40), seed: int = 0) -> None:
        from robot_learn.envs import make_expert

        lo, hi = self.check(freeze_fraction, freeze_after)
        self.robot, self.task = robot, task
        self.freeze_fraction, self.freeze_range = float(freeze_fraction), (lo, hi)
        self.rng = np.random.default_rng(seed)
        self.expert = make_expert(task, seed=seed)
        self.freeze_at: int | None = None  # env step at which this episode freezes (None: never)
        self.frozen = False

    @staticmethod
    def check(freeze_fraction: float, freeze_after: Sequence[int]) -> tuple[int, int]:
        """``freeze_after`` as ``(low, high)``; ValueError naming the setting when either is out of range."""
        if not 0.0 <= float(freeze_fraction) <= 1.0:
            raise ValueError(f"freeze_fraction must be in [0, 1], got {freeze_fraction}")
        values = list(freeze_after)
        if len(values) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) for v in values) \
                or not 0 <= values[0] <= values[1]:
            raise ValueError(f"freeze_after must be [low, high] integers with 0 <= low <= high, got {values}")
        return values[0], values[1]

    def reset(self) -> None:
        """Called by the session at an episode's start and after a hand back."""
        env = self.robot.env
        if env.unwrapped.steps == 0:  # a new episode
            self.expert.reset(env)
            freezes = self.rng.random() < self.freeze_fraction
            self.freeze_at = int(self.rng.integers(self.freeze_range[0], self.freeze_range[1] + 1)) if freezes else None
            self.frozen = False
        else:  # handed back: drive on from where the operator left the scene
            resume_expert(self.expert, env)
            self.freeze_at, self.frozen = None, False

    def act(self, obs: dict[str, Any]) -> np.ndarray:
        env = self.robot.env
        if self.freeze_at is not None and env.unwrapped.steps >= self.freeze_at:
            self.frozen = True
        if self.frozen:
            gripper_closed = float(np.asarray(obs["state"])[5]) > 0.5
            return np.append(pose_of(obs), float(gripper_closed)).astype(np.float32)
        return self.expert.act(None, env)
