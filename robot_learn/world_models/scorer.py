"""Labelling imagined frames with success and progress.

``NearestFrameScorer`` is the default, non-parametric labeller: an imagined step
takes the progress of the stored step whose (downsampled) frame and state are
nearest, and counts as a success when that stored step ended a successful episode.
Anything with the same ``score`` method (a learned success model, an external
judge) can replace it in :class:`~robot_learn.world_models.env.WorldModelEnv`.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
import torch
import torch.nn.functional as F

from robot_learn.data.views import EpisodeView


class RolloutScorer(Protocol):
    """Labels one imagined step: ``(success, progress in [0, 1])``."""

    def score(self, frame: np.ndarray, state: np.ndarray, instruction: str) -> tuple[bool, float]: ...


class NearestFrameScorer:
    """Success and progress of the nearest stored step (16 px frame + normalised state)."""

    def __init__(self, view: EpisodeView, camera: str, pool: int = 16) -> None:
        store = view.store
        self.pool = pool
        frames = view.read(f"images/{camera}")
        states = view.read("state").astype(np.float32)
        self.state_mean, self.state_std = states.mean(0), states.std(0) + 1e-3
        self.features = self._features(torch.as_tensor(frames), states)
        self.progress = view.read("progress").astype(np.float32)
        ends = store.episode_ends[view.episodes] - store.episode_starts[view.episodes]
        last = np.cumsum(ends) - 1
        self.success = np.zeros(len(self.progress), dtype=bool)
        self.success[last[np.asarray(view.meta["success"], dtype=bool)]] = True

    def _features(self, frames: torch.Tensor, states: np.ndarray) -> torch.Tensor:
        small = F.adaptive_avg_pool2d(frames.permute(0, 3, 1, 2).float() / 255.0, self.pool).flatten(1)
        state = torch.as_tensor((states - self.state_mean) / self.state_std, dtype=torch.float32)
        return torch.cat([small, 0.1 * state], dim=1)

    def score(self, frame: np.ndarray, state: np.ndarray, instruction: str) -> tuple[bool, float]:
        query = self._features(torch.as_tensor(np.asarray(frame))[None], np.asarray(state, np.float32)[None])
        i = int(torch.cdist(query, self.features).argmin())
        return bool(self.success[i]), float(np.clip(self.progress[i], 0.0, 1.0))
