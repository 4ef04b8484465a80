"""Driving an arm with a policy saved by :mod:`robot_learn.policies`: :class:`SavedPolicyDriver`.

Used by ``robot-learn hw run-policy``; lives here, not in ``cli/``, so library code and
benchmarks can drive an arm the same way without importing the CLI.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np

from robot_learn.hardware import ChunkInterpolator, ServoArm


class SavedPolicyDriver:
    """Runs a policy saved by `robot_learn.policies` on an arm: the arm's joint positions
    (in its normalised units, joint order) are the policy's `state`, and the policy's
    joint-mode actions are the joint targets.

    Without interpolation every loop tick calls `select_action` (the policy's own
    receding-horizon queue). With it, a chunk is predicted at `policy_hz` and its executed
    part is interpolated linearly onto the `loop_hz` ticks (`ChunkInterpolator`); the
    observation history is sampled at `policy_hz`, the rate the policy was trained at."""

    def __init__(self, directory: str, arm: ServoArm, loop_hz: float, interpolate: bool = False,
                 policy_hz: float = 10.0, instruction: str | None = None, seed: int = 0) -> None:
        import torch

        from robot_learn.policies import IncompatiblePolicyError, load_policy

        self._torch = torch
        self.joint_names = arm.joint_names
        n = len(self.joint_names)
        try:
            self.policy = load_policy(directory, action_dim=n, obs_shapes={"state": (n,)})
        except IncompatiblePolicyError as exc:
            raise ValueError(
                f"policy {directory} does not fit {arm.config.robot_type}: the arm provides 'state' = its {n} "
                f"joint positions ({', '.join(self.joint_names)}) and takes {n} joint targets; {exc}") from None
        self.policy.reset()
        self.instruction = instruction
        self.generator = torch.Generator().manual_seed(seed)
        self.interpolator = ChunkInterpolator(policy_hz, loop_hz) if interpolate else None
        self._history: deque[np.ndarray] = deque(maxlen=self.policy.obs_horizon)
        self._phase = 1.0  # in policy steps; >= 1 means "sample an observation now"
        self._ratio = policy_hz / loop_hz

    def __call__(self, obs: dict[str, Any]) -> np.ndarray:
        """The joint targets for this loop tick."""
        state = np.array([obs[j] for j in self.joint_names], dtype=np.float32)
        if self.interpolator is None:
            step = {"state": state[None]}
            if self.instruction is not None:
                step["instruction"] = self.instruction
            return self.policy.select_action(step, generator=self.generator)[0].cpu().numpy()
        if self._phase >= 1.0 - 1e-9:
            self._phase -= 1.0
            if not self._history:  # episode start: pad with the first observation
                self._history.extend([state] * self.policy.obs_horizon)
            self._history.append(state)
        self._phase += self._ratio
        if self.interpolator.exhausted:
            hist = {"state": self._torch.from_numpy(np.stack(self._history)[None])}
            if self.instruction is not None:
                hist["instruction"] = [self.instruction]
            with self._torch.no_grad():
                chunk = self.policy.predict_action_chunk(hist, generator=self.generator)[0].cpu().numpy()
            # Play the executed actions plus the one after them (when the chunk has it) as the
            # end point of the last interval, so a chunk fills exactly execute_horizon policy
            # steps and the next chunk is predicted when its first action is due.
            start = self.policy.obs_horizon - 1  # chunk index of the current step
            self.interpolator.set_chunk(chunk[start:start + self.policy.execute_horizon + 1])
        return self.interpolator.next().astype(np.float32)
