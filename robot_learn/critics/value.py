"""RECAP's distributional value critic and advantage labels (METHODS.md section 5).

1. Rewards: -1 per step; at the end 0 on success, ``-failure_penalty`` on failure.
   Monte Carlo returns are normalised to (-1, 0) by the largest possible magnitude.
2. :class:`ValueCritic`: an MLP over low-dim observations giving logits over
   ``num_bins`` bins spanning [-1, 0], trained with cross-entropy on the bin of each
   step's MC return; V(o) is the expectation under the softmax.
3. Advantage ``A_t = R_t^(N) + V(o_{t+N}) - V(o_t)`` with the N-step return
   ``R_t^(N)`` (normalised rewards of steps t..t+N-1), and indicator
   ``I_t = 1[A_t > eps_task]`` where ``eps_task`` is a per-task percentile of A.
   Steps a human controlled are forced to ``I = 1``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import torch
from torch import nn

from robot_learn.critics.minibatch_fit import fit_minibatches


def normalised_rewards(length: int, success: bool, failure_penalty: float, max_length: int) -> np.ndarray:
    """Per-step rewards of an episode, scaled so any return lies in [-1, 0]."""
    r = -np.ones(length, dtype=np.float64)
    if not success:
        r[-1] -= failure_penalty
    return r / float(max_length + failure_penalty)


def mc_returns(rewards: np.ndarray) -> np.ndarray:
    """Undiscounted reward-to-go ``G_t = sum_{k >= t} r_k``."""
    return np.cumsum(np.asarray(rewards)[::-1])[::-1].copy()


class ValueCritic(nn.Module):
    """Distributional value function over ``num_bins`` bins on [-1, 0] (see the module docstring)."""

    def __init__(self, in_dim: int, num_bins: int = 201, hidden: int = 128) -> None:
        super().__init__()
        if num_bins < 2:
            raise ValueError(f"num_bins must be >= 2, got {num_bins}")
        self.net = nn.Sequential(nn.Linear(in_dim, hidden), nn.Mish(), nn.Linear(hidden, hidden), nn.Mish(),
                                 nn.Linear(hidden, num_bins))
        self.register_buffer("centres", torch.linspace(-1.0, 0.0, num_bins))
        self.register_buffer("mean", torch.zeros(in_dim))
        self.register_buffer("std", torch.ones(in_dim))

    def bin_of(self, returns: torch.Tensor) -> torch.Tensor:
        """Index of the nearest bin centre of each return."""
        n = len(self.centres)
        return ((returns.clamp(-1.0, 0.0) + 1.0) * (n - 1)).round().long()

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        return self.net((x - self.mean) / self.std)

    @torch.no_grad()
    def value(self, x: np.ndarray | torch.Tensor) -> np.ndarray:
        """Expected return ``V(o)`` of each row of features."""
        x = torch.as_tensor(x, dtype=torch.float32)
        probs = torch.softmax(self.logits(x), dim=-1)
        return (probs * self.centres).sum(-1).numpy()

    def fit(self, x: np.ndarray, returns: np.ndarray, steps: int = 500, batch_size: int = 256,
            lr: float = 1e-3, seed: int = 0) -> float:
        """Cross-entropy on the bin of each MC return; returns the final loss."""
        x_t = torch.as_tensor(x, dtype=torch.float32)
        y = self.bin_of(torch.as_tensor(returns, dtype=torch.float32))
        self.mean, self.std = x_t.mean(0), x_t.std(0).clamp_min(1e-4)
        torch.manual_seed(seed)
        def loss_of(idx: torch.Tensor) -> torch.Tensor:
            return nn.functional.cross_entropy(self.logits(x_t[idx]), y[idx])

        return fit_minibatches(self.net.parameters(), loss_of, len(x_t), steps, batch_size, lr, seed)


@dataclass
class RecapLabels:
    """Per-step advantage labels of the episodes of a view, in view order."""

    episodes: np.ndarray          # store episode indices
    advantage: list[np.ndarray]   # A_t per episode
    indicator: list[np.ndarray]   # bool I_t per episode
    threshold: dict[str, float]   # eps_task per task


def advantages(values: np.ndarray, rewards: np.ndarray, n_step: int) -> np.ndarray:
    """``A_t = sum_{k=t}^{t+N-1} r_k + V_{t+N} - V_t``, with V = 0 after the episode ends."""
    T = len(rewards)
    v = np.append(np.asarray(values, dtype=np.float64), 0.0)
    csum = np.concatenate([[0.0], np.cumsum(rewards)])
    t = np.arange(T)
    end = np.minimum(t + n_step, T)
    return csum[end] - csum[t] + v[end] - v[t]


def recap_labels(view: Any, obs_keys: Sequence[str] = ("state", "env_state"), *, failure_penalty: float = 50.0,
                 max_length: int | None = None, n_step: int = 10, percentile: float = 30.0,
                 critic_steps: int = 500, num_bins: int = 201, seed: int = 0,
                 critic: ValueCritic | None = None) -> RecapLabels:
    """Train a :class:`ValueCritic` on ``view`` (all its episodes) and label every step.

    ``percentile``: eps_task is this percentile of the advantages of the task's steps,
    so about ``100 - percentile`` % of the non-human steps are labelled positive.
    """
    store = view.store
    episodes = np.asarray(view.episodes)
    meta = store.meta
    lengths = store.episode_ends[episodes] - store.episode_starts[episodes]
    max_length = int(max_length or lengths.max())
    feats, rets, rewards = [], [], []
    for e in episodes:
        start, end = store.episode_range(int(e))
        feats.append(np.concatenate([store.read(k, start, end).reshape(end - start, -1) for k in obs_keys], 1))
        r = normalised_rewards(end - start, bool(meta["success"][e]), failure_penalty, max_length)
        rewards.append(r)
        rets.append(mc_returns(r))
    if critic is None:
        critic = ValueCritic(feats[0].shape[1], num_bins=num_bins)
        critic.fit(np.concatenate(feats), np.concatenate(rets), steps=critic_steps, seed=seed)
    adv = [advantages(critic.value(f), r, n_step) for f, r in zip(feats, rewards)]
    tasks = meta["task"][episodes]
    threshold = {str(task): float(np.percentile(np.concatenate([a for a, t in zip(adv, tasks) if t == task]),
                                                percentile)) for task in np.unique(tasks)}
    indicator = []
    for e, a, task in zip(episodes, adv, tasks):
        start, end = store.episode_range(int(e))
        human = store.read("intervention", start, end).astype(bool)
        indicator.append((a > threshold[str(task)]) | human)
    return RecapLabels(episodes, adv, indicator, threshold)
