"""Low-dimensional observation encoder: normalise, concatenate, MLP."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import nn

from robot_learn.policies.normalizer import MinMaxNormalizer


class StateEncoder(nn.Module):
    """Encodes the low-dim keys (e.g. ``state``, ``env_state``) of each time step.

    Each key is min-max normalised with its own buffers, the keys are concatenated
    in the order of ``dims``, and an MLP maps them to ``out_dim`` features.
    Input ``{key: [B, To, D_key]}`` -> ``[B, To, out_dim]``.
    """

    def __init__(
        self,
        dims: Mapping[str, int],
        hidden_dims: Sequence[int] = (128,),
        out_dim: int = 64,
        stats: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        super().__init__()
        if not dims:
            raise ValueError("StateEncoder needs at least one low-dim observation key")
        self.keys = tuple(dims)
        self.dims = {key: int(dim) for key, dim in dims.items()}
        if stats is not None:
            missing = [key for key in self.keys if key not in stats]
            if missing:
                raise ValueError(f"stats lack observation keys {missing}; stats have {sorted(stats)}")
        self.normalizers = nn.ModuleDict(
            {key: MinMaxNormalizer(dim, None if stats is None else stats[key], name=key) for key, dim in self.dims.items()}
        )
        layers: list[nn.Module] = []
        width = sum(self.dims.values())
        for hidden in hidden_dims:
            layers += [nn.Linear(width, hidden), nn.Mish()]
            width = hidden
        layers.append(nn.Linear(width, out_dim))
        self.mlp = nn.Sequential(*layers)
        self.out_dim = int(out_dim)

    def forward(self, obs: Mapping[str, torch.Tensor]) -> torch.Tensor:
        missing = [key for key in self.keys if key not in obs]
        if missing:
            raise ValueError(f"observation lacks low-dim keys {missing}; it has {sorted(obs)}")
        parts = [self.normalizers[key].normalize(obs[key]) for key in self.keys]
        return self.mlp(torch.cat(parts, dim=-1))
