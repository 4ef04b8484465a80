"""1-D temporal U-Net denoiser with FiLM conditioning (the diffusion-policy CNN).

The action chunk ``[B, Ta, A]`` is treated as an A-channel signal over Ta steps.
Each residual block modulates its features with a per-channel scale and bias
computed from the condition: the timestep embedding concatenated with the
flattened observation features (and the instruction features, if any).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from robot_learn.policies.diffusion.matmul_conv import MatmulConv1d
from robot_learn.policies.diffusion.timestep_embedding import SinusoidalTimestepEmbedding


class ConvNormMish(nn.Sequential):
    """Conv1d -> GroupNorm -> Mish, length-preserving."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, groups: int) -> None:
        super().__init__(
            MatmulConv1d(in_channels, out_channels, kernel_size, padding=kernel_size // 2),
            nn.GroupNorm(groups, out_channels),
            nn.Mish(),
        )


class FiLMResidualBlock(nn.Module):
    """Two conv blocks; the first one's output is scaled and shifted by the condition (FiLM)."""

    def __init__(self, in_channels: int, out_channels: int, cond_dim: int, kernel_size: int, groups: int) -> None:
        super().__init__()
        self.block1 = ConvNormMish(in_channels, out_channels, kernel_size, groups)
        self.block2 = ConvNormMish(out_channels, out_channels, kernel_size, groups)
        self.film = nn.Sequential(nn.Mish(), nn.Linear(cond_dim, 2 * out_channels))
        self.skip = MatmulConv1d(in_channels, out_channels, 1) if in_channels != out_channels else nn.Identity()

    def forward(self, x: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        h = self.block1(x)
        scale, shift = self.film(cond).unsqueeze(-1).chunk(2, dim=1)
        h = self.block2(scale * h + shift)
        return h + self.skip(x)


class ConditionalUnet1D(nn.Module):
    """``forward(sample [B, Ta, A], timesteps [B], obs_features [B, To, F], text_features [B, T] | None) -> [B, Ta, A]``.

    ``down_dims`` are the channel widths per resolution; the chunk is halved between
    consecutive levels, so ``action_horizon`` must be divisible by
    ``2 ** (len(down_dims) - 1)``.
    """

    def __init__(
        self,
        action_dim: int,
        global_cond_dim: int,
        down_dims: Sequence[int] = (64, 128, 256),
        kernel_size: int = 5,
        groups: int = 8,
        timestep_embed_dim: int = 128,
    ) -> None:
        super().__init__()
        bad = [width for width in down_dims if width % groups]
        if bad:
            raise ValueError(f"down_dims {list(down_dims)} must be divisible by unet_groups={groups}; offending: {bad}")
        self.timestep_embedding = nn.Sequential(
            SinusoidalTimestepEmbedding(timestep_embed_dim),
            nn.Linear(timestep_embed_dim, 4 * timestep_embed_dim),
            nn.Mish(),
            nn.Linear(4 * timestep_embed_dim, timestep_embed_dim),
        )
        cond_dim = timestep_embed_dim + global_cond_dim
        widths = [action_dim, *down_dims]
        levels = list(zip(widths[:-1], widths[1:]))

        self.down = nn.ModuleList()
        for index, (w_in, w_out) in enumerate(levels):
            last = index == len(levels) - 1
            self.down.append(
                nn.ModuleList(
                    [
                        FiLMResidualBlock(w_in, w_out, cond_dim, kernel_size, groups),
                        FiLMResidualBlock(w_out, w_out, cond_dim, kernel_size, groups),
                        nn.Identity() if last else MatmulConv1d(w_out, w_out, 3, stride=2, padding=1),
                    ]
                )
            )
        bottom = down_dims[-1]
        self.middle = nn.ModuleList(
            [FiLMResidualBlock(bottom, bottom, cond_dim, kernel_size, groups) for _ in range(2)]
        )
        # Going up, each level takes the matching skip connection (hence 2 * width in).
        self.up = nn.ModuleList()
        for w_in, w_out in reversed(levels[1:]):
            self.up.append(
                nn.ModuleList(
                    [
                        FiLMResidualBlock(2 * w_out, w_in, cond_dim, kernel_size, groups),
                        FiLMResidualBlock(w_in, w_in, cond_dim, kernel_size, groups),
                        nn.ConvTranspose1d(w_in, w_in, 4, stride=2, padding=1),
                    ]
                )
            )
        self.head = nn.Sequential(
            ConvNormMish(down_dims[0], down_dims[0], kernel_size, groups), MatmulConv1d(down_dims[0], action_dim, 1)
        )

    def forward(
        self,
        sample: torch.Tensor,
        timesteps: torch.Tensor,
        obs_features: torch.Tensor,
        text_features: torch.Tensor | None = None,
    ) -> torch.Tensor:
        cond_parts = [self.timestep_embedding(timesteps), obs_features.flatten(1)]
        if text_features is not None:
            cond_parts.append(text_features)
        cond = torch.cat(cond_parts, dim=-1)

        x = sample.transpose(1, 2)  # [B, A, Ta]: actions as channels
        skips = []
        for block1, block2, downsample in self.down:
            x = block2(block1(x, cond), cond)
            skips.append(x)
            x = downsample(x)
        for block in self.middle:
            x = block(x, cond)
        for block1, block2, upsample in self.up:
            x = torch.cat([x, skips.pop()], dim=1)
            x = upsample(block2(block1(x, cond), cond))
        return self.head(x).transpose(1, 2)
