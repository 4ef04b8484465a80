"""A small progress critic: regresses task progress in [0, 1] from low-dim observations.

The CPU stand-in for HELP's VLAC-CUT critic: an MLP over the concatenated,
standardised observation keys, trained with MSE against the ``progress`` the
envs record. Its predicted curve feeds :mod:`robot_learn.critics.segmentation`.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch
from torch import nn

from robot_learn.critics.minibatch_fit import fit_minibatches


class ProgressCritic(nn.Module):
    """``predict(features [T, D]) -> progress [T]`` after :meth:`fit` on stored episodes."""

    def __init__(self, obs_keys: Sequence[str] = ("state", "env_state"), hidden: int = 128) -> None:
        super().__init__()
        self.obs_keys = tuple(obs_keys)
        self.hidden = int(hidden)
        self.net: nn.Module | None = None
        self.register_buffer("mean", torch.zeros(0))
        self.register_buffer("std", torch.ones(0))

    def features(self, view: Any, episode: int | None = None) -> np.ndarray:
        """Observation features of every step of ``view`` (or of one store episode)."""
        store = view.store if hasattr(view, "store") else view
        if episode is not None:
            start, end = store.episode_range(episode)
            return np.concatenate([store.read(k, start, end).reshape(end - start, -1) for k in self.obs_keys], 1)
        return np.concatenate([view.read(k).reshape(view.num_frames, -1) for k in self.obs_keys], 1)

    def fit(self, view: Any, steps: int = 500, batch_size: int = 256, lr: float = 1e-3, seed: int = 0) -> float:
        """Train on every step of ``view`` (a store or view with ``progress``); returns the final MSE."""
        x = torch.as_tensor(self.features(view), dtype=torch.float32)
        y = torch.as_tensor(view.read("progress"), dtype=torch.float32).reshape(-1)
        torch.manual_seed(seed)
        self.mean, self.std = x.mean(0), x.std(0).clamp_min(1e-4)
        self.net = nn.Sequential(nn.Linear(x.shape[1], self.hidden), nn.Mish(),
                                 nn.Linear(self.hidden, self.hidden), nn.Mish(), nn.Linear(self.hidden, 1))
        def loss_of(idx: torch.Tensor) -> torch.Tensor:
            return nn.functional.mse_loss(self._forward(x[idx]), y[idx])

        return fit_minibatches(self.net.parameters(), loss_of, len(x), steps, batch_size, lr, seed)

    def _forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.net is None:
            raise RuntimeError("ProgressCritic is not trained; call fit() first")
        return torch.sigmoid(self.net((x - self.mean) / self.std)).squeeze(-1)

    @torch.no_grad()
    def predict(self, features: np.ndarray) -> np.ndarray:
        """Predicted progress ``[T]`` for features ``[T, D]``."""
        return self._forward(torch.as_tensor(features, dtype=torch.float32)).numpy()
