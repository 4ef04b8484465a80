"""Sinusoidal embedding of diffusion timesteps."""

from __future__ import annotations

import math

import torch
from torch import nn


class SinusoidalTimestepEmbedding(nn.Module):
    """Integer timesteps ``[B]`` -> ``[B, dim]`` (half sines, half cosines, geometric frequencies)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        if dim % 2:
            raise ValueError(f"timestep embedding dim must be even, got {dim}")
        self.dim = dim

    def forward(self, timesteps: torch.Tensor) -> torch.Tensor:
        half = self.dim // 2
        frequencies = torch.exp(-math.log(10000.0) * torch.arange(half, device=timesteps.device, dtype=torch.float32) / max(half - 1, 1))
        angles = timesteps.float()[:, None] * frequencies[None, :]
        return torch.cat([angles.sin(), angles.cos()], dim=-1)
