"""Action tokenizer: continuous action chunks <-> integer tokens (the OpenVLA recipe).

Each action dimension is mapped to [-1, 1] with the dataset's 1st/99th percentiles
(``q01``/``q99`` from ``EpisodeStore.stats``), clipped, and split into ``num_bins``
uniform bins. Token ``num_bins`` is [MASK]. Decoding returns bin centres, so
``decode(encode(a))`` is within half a bin width of the clipped action.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch
from torch import nn

# A dimension whose q01..q99 range is below this is treated as constant: its bins
# span this width around the value instead of dividing by ~0.
_MIN_RANGE = 1e-4


class ActionTokenizer(nn.Module):
    """Bins ``[..., action_dim]`` actions into tokens in ``[0, num_bins)``; ``mask_id = num_bins``.

    The bounds are buffers, so they are saved with the policy weights. Built
    without statistics the range is [-1, 1] (filled in by ``load_state_dict``).
    """

    def __init__(self, action_dim: int, num_bins: int = 256, stats: Mapping[str, np.ndarray] | None = None) -> None:
        super().__init__()
        if num_bins < 2:
            raise ValueError(f"num_bins must be >= 2, got {num_bins}")
        self.action_dim = int(action_dim)
        self.num_bins = int(num_bins)
        low = -np.ones(self.action_dim, dtype=np.float32)
        high = np.ones(self.action_dim, dtype=np.float32)
        if stats is not None:
            low, high = _percentile_bounds(stats, self.action_dim)
        centre = (low + high) / 2
        half = np.maximum(high - low, _MIN_RANGE) / 2
        self.register_buffer("low", torch.from_numpy((centre - half).astype(np.float32)))
        self.register_buffer("high", torch.from_numpy((centre + half).astype(np.float32)))
        # Saved with the weights so a checkpoint can be checked against a config's bin count.
        self.register_buffer("bins", torch.tensor(self.num_bins, dtype=torch.long))

    @property
    def mask_id(self) -> int:
        return self.num_bins

    @property
    def vocab_size(self) -> int:
        """Bins plus [MASK]."""
        return self.num_bins + 1

    @property
    def bin_width(self) -> torch.Tensor:
        """Width of one bin per dimension, in action units."""
        return (self.high - self.low) / self.num_bins

    def normalize(self, actions: torch.Tensor) -> torch.Tensor:
        """Actions -> [-1, 1] at q01/q99 (not clipped)."""
        self._check(actions)
        return 2.0 * (actions.float() - self.low) / (self.high - self.low) - 1.0

    def encode(self, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(tokens long [..., A], clipped bool [..., A])``: which values lay outside q01..q99."""
        x = self.normalize(actions)
        clipped = (x < -1.0) | (x > 1.0)
        x = x.clamp(-1.0, 1.0)
        tokens = torch.floor((x + 1.0) / 2.0 * self.num_bins).long().clamp(0, self.num_bins - 1)
        return tokens, clipped

    def soft_targets(self, actions: torch.Tensor, sigma_bins: float) -> torch.Tensor:
        """Histogram targets ``[..., action_dim, num_bins]``: the mass of a Gaussian centred on
        each (clipped, normalised) action value with std ``sigma_bins`` bin widths over each
        bin (HL-Gauss, Farebrother et al. 2024). Nearby bins share credit, so the classifier
        learns that bin 100 is close to bin 101. ``sigma_bins`` must be > 0 (its limit at 0 is
        the one-hot target of :meth:`encode`, which the policy uses then)."""
        x = self.normalize(actions).clamp(-1.0, 1.0)
        position = (x + 1.0) / 2.0 * self.num_bins  # in bin units, edges at 0..num_bins
        edges = torch.arange(self.num_bins + 1, device=x.device, dtype=x.dtype)
        cdf = torch.special.ndtr((edges - position.unsqueeze(-1)) / sigma_bins)
        mass = cdf[..., 1:] - cdf[..., :-1]
        return mass / mass.sum(-1, keepdim=True).clamp_min(1e-12)

    def decode(self, tokens: torch.Tensor) -> torch.Tensor:
        """Tokens ``[..., A]`` -> bin-centre actions. [MASK] ids raise ValueError."""
        if tokens.shape[-1] != self.action_dim:
            raise ValueError(f"tokens need {self.action_dim} dims in the last axis, got shape {tuple(tokens.shape)}")
        if bool((tokens < 0).any() or (tokens >= self.num_bins).any()):
            raise ValueError(f"cannot decode tokens outside [0, {self.num_bins}) (e.g. [MASK] = {self.mask_id})")
        x = (tokens.float() + 0.5) / self.num_bins * 2.0 - 1.0
        return (x + 1.0) / 2.0 * (self.high - self.low) + self.low

    def _check(self, actions: torch.Tensor) -> None:
        if actions.shape[-1] != self.action_dim:
            raise ValueError(f"actions need {self.action_dim} dims in the last axis, got shape {tuple(actions.shape)}")

    def extra_repr(self) -> str:
        return f"action_dim={self.action_dim}, num_bins={self.num_bins}"


def _percentile_bounds(stats: Mapping[str, np.ndarray], dim: int) -> tuple[np.ndarray, np.ndarray]:
    missing = [k for k in ("q01", "q99") if k not in stats]
    if missing:
        raise ValueError(f"action stats lack {missing} (the tokenizer bins between q01 and q99); got keys {sorted(stats)}")
    low = np.asarray(stats["q01"], dtype=np.float32).reshape(-1)
    high = np.asarray(stats["q99"], dtype=np.float32).reshape(-1)
    if low.shape != (dim,) or high.shape != (dim,):
        raise ValueError(f"action stats have {low.shape[0]} dims but the policy expects {dim}")
    if not (np.isfinite(low).all() and np.isfinite(high).all()):
        raise ValueError("action stats q01/q99 contain NaN or Inf")
    if (high < low).any():
        raise ValueError(f"action stats have q99 < q01 at dims {np.nonzero(high < low)[0].tolist()}")
    return low, high
