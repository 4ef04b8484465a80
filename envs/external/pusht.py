"""gym-pusht's PushT (``PushT-v0``; 2-D, 10 Hz): push a T block onto a fixed goal pose.

- ``state`` (2): agent x, y (pixels of the 512 x 512 arena).
- ``env_state`` (4): block x, y, cos(angle), sin(angle) (no wrap-around jump).
- actions (2): absolute agent target x, y in [0, 512].
- ``success``: goal coverage > 95%; ``progress``: coverage / 0.95, capped at 1.

The one camera is ``front`` (gym-pusht's top-down render); with no camera the
env runs state-only and draws nothing.
"""

from __future__ import annotations

import numpy as np

from .base import ExternalEnv, VIDEO_SIZE
from .registry import require

SUCCESS_COVERAGE = 0.95
GOAL_POSE = (256.0, 256.0, np.pi / 4)  # gym-pusht's fixed goal: x, y, angle


class PushTEnv(ExternalEnv):
    """PushT with robot-learn observations; ``cameras=("front",)`` adds pixels."""

    camera_names = ("front",)

    def __init__(self, *, max_steps: int, cameras: tuple[str, ...] = (), image_size: int | tuple[int, int] = 96,
                 render_mode: str | None = None):
        pusht = require("gym_pusht.envs.pusht", "gym-pusht", "pusht")
        super().__init__("pusht", max_steps=max_steps, cameras=cameras, image_size=image_size, state_dim=2,
                         env_state_dim=4, action_low=np.zeros(2), action_high=np.full(2, 512.0),
                         instruction="push the T block onto the target", render_mode=render_mode)
        h, w = self.image_hw
        self.pusht = pusht.PushTEnv(obs_type="pixels_agent_pos" if cameras else "state", observation_width=w,
                                    observation_height=h, visualization_width=VIDEO_SIZE,
                                    visualization_height=VIDEO_SIZE)
        self._pixels: np.ndarray | None = None
        self._info: dict = {}

    def _keep(self, obs, info) -> None:
        self._pixels = obs["pixels"] if isinstance(obs, dict) else None
        self._info = info

    def _reset(self, seed: int) -> tuple[bool, float]:
        self._keep(*self.pusht.reset(seed=seed))
        coverage = self.pusht._get_coverage()  # reset's info has none
        return coverage > SUCCESS_COVERAGE, min(coverage / SUCCESS_COVERAGE, 1.0)

    def _step(self, action: np.ndarray) -> tuple[float, bool, float]:
        obs, reward, _, _, info = self.pusht.step(action)
        self._keep(obs, info)
        return float(reward), bool(info["is_success"]), min(float(info["coverage"]) / SUCCESS_COVERAGE, 1.0)

    def _state(self) -> tuple[np.ndarray, np.ndarray]:
        x, y, angle = self._info["block_pose"]
        return self._info["pos_agent"], np.array([x, y, np.cos(angle), np.sin(angle)])

    def _render(self, camera: str, height: int, width: int) -> np.ndarray:
        if (height, width) == self.image_hw and self._pixels is not None:
            return self._pixels
        return self.pusht.render()  # the video frame (VIDEO_SIZE square)

    def close(self):
        self.pusht.close()
