"""Min-max normalisation kept inside the policy as buffers.

Statistics come from ``EpisodeStore.stats`` (``{"min", "max", "mean", "std", "q01",
"q99"}`` per key, numpy float32 per feature). Because the bounds are buffers, they
are saved with the weights, moved by ``.to(device)``, and ignored by optimisers and
by ``diffusers.training_utils.EMAModel`` (which only tracks parameters).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch
from torch import nn

# A feature whose range is below this is treated as constant: it is centred but not
# scaled, so it maps to 0 instead of blowing up to +-inf.
_MIN_RANGE = 1e-4


class MinMaxNormalizer(nn.Module):
    """Maps each feature from ``[min, max]`` to ``[-1, 1]`` (last dimension = features).

    Built without statistics it is the identity (min -1, max 1); ``load_state_dict``
    then fills in the saved bounds.
    """

    def __init__(self, dim: int, stats: Mapping[str, np.ndarray] | None = None, name: str = "") -> None:
        super().__init__()
        self.dim = int(dim)
        low = -np.ones(self.dim, dtype=np.float32)
        high = np.ones(self.dim, dtype=np.float32)
        if stats is not None:
            low, high = _bounds_from_stats(stats, self.dim, name)
        centre = (high + low) / 2.0
        span = high - low
        scale = np.where(span > _MIN_RANGE, 2.0 / np.maximum(span, _MIN_RANGE), 1.0).astype(np.float32)
        self.register_buffer("centre", torch.from_numpy(centre.astype(np.float32)))
        self.register_buffer("scale", torch.from_numpy(scale))

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        """Raw values -> roughly [-1, 1] (exactly for values inside the stats range)."""
        self._check(x)
        return (x.float() - self.centre) * self.scale

    def unnormalize(self, x: torch.Tensor) -> torch.Tensor:
        """Inverse of :meth:`normalize`."""
        self._check(x)
        return x.float() / self.scale + self.centre

    def _check(self, x: torch.Tensor) -> None:
        if x.shape[-1] != self.dim:
            raise ValueError(f"normaliser expects {self.dim} features in the last dimension, got shape {tuple(x.shape)}")

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


def _bounds_from_stats(stats: Mapping[str, np.ndarray], dim: int, name: str) -> tuple[np.ndarray, np.ndarray]:
    label = f"stats for '{name}'" if name else "stats"
    missing = [k for k in ("min", "max") if k not in stats]
    if missing:
        raise ValueError(f"{label} lack {missing}; got keys {sorted(stats)}")
    low = np.asarray(stats["min"], dtype=np.float32).reshape(-1)
    high = np.asarray(stats["max"], dtype=np.float32).reshape(-1)
    if low.shape != (dim,) or high.shape != (dim,):
        raise ValueError(f"{label} have {low.shape[0]} features but the policy expects {dim}")
    if not (np.isfinite(low).all() and np.isfinite(high).all()):
        raise ValueError(f"{label} contain NaN or Inf")
    if (high < low).any():
        raise ValueError(f"{label} have max < min at features {np.nonzero(high < low)[0].tolist()}")
    return low, high
