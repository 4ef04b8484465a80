"""Camera encoder: a small ResNet with GroupNorm and a spatial-softmax keypoint head.

With ``cond_dim > 0`` each stage's output is FiLM-modulated by a conditioning vector
(the instruction's embedding), as in RT-1's language-conditioned image tokenizer: the
keypoints can then follow the object the instruction names instead of every object.
The FiLM layers start at zero, so a conditioned encoder begins as the plain one.

GroupNorm replaces BatchNorm because batch statistics interact badly with the EMA
weights used at evaluation (the diffusion-policy recipe). Images arrive as uint8
``[N, H, W, 3]``; training takes a random crop per image, eval the centre crop.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from robot_learn.policies.compiled_call import CompiledCall
from robot_learn.policies.image_crop import CroppingImageModule


def _group_norm(channels: int) -> nn.GroupNorm:
    groups = 8 if channels % 8 == 0 else 1
    return nn.GroupNorm(groups, channels)


class ResidualBlock(nn.Module):
    """Two 3x3 convolutions with GroupNorm and a skip connection (ResNet basic block)."""

    def __init__(self, in_channels: int, out_channels: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride=stride, padding=1, bias=False)
        self.norm1 = _group_norm(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1, bias=False)
        self.norm2 = _group_norm(out_channels)
        self.skip: nn.Module = nn.Identity()
        if stride != 1 or in_channels != out_channels:
            self.skip = nn.Sequential(nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False), _group_norm(out_channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.norm1(self.conv1(x)))
        out = self.norm2(self.conv2(out))
        return F.relu(out + self.skip(x))


class SpatialSoftmax(nn.Module):
    """Feature maps -> ``num_keypoints`` expected (x, y) image positions in [-1, 1]."""

    def __init__(self, in_channels: int, num_keypoints: int) -> None:
        super().__init__()
        self.keypoints = nn.Conv2d(in_channels, num_keypoints, 1)
        self.num_keypoints = num_keypoints

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        maps = self.keypoints(features)
        n, k, h, w = maps.shape
        attention = torch.softmax(maps.reshape(n, k, h * w).float(), dim=-1)
        ys, xs = torch.meshgrid(
            torch.linspace(-1.0, 1.0, h, device=maps.device), torch.linspace(-1.0, 1.0, w, device=maps.device), indexing="ij"
        )
        grid = torch.stack([xs.reshape(-1), ys.reshape(-1)], dim=-1)  # [HW, 2]
        return (attention @ grid).reshape(n, 2 * k)


VISION_POOLS = ("spatial_softmax", "flatten")


class FlattenHead(nn.Module):
    """Feature maps -> a 1x1 conv down to ``channels`` -> flattened, so each output
    weight reads one place in the image (the DrQ / SAC-AE style of head)."""

    def __init__(self, in_channels: int, channels: int, height: int, width: int) -> None:
        super().__init__()
        self.reduce = nn.Conv2d(in_channels, channels, 1)
        self.out_dim = channels * height * width

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.reduce(features).flatten(1)


class VisionEncoder(CroppingImageModule):
    """uint8 ``[N, H, W, 3]`` -> ``[N, out_dim]``.

    ``channels`` gives the width of each stage (ResNet-18 is 64, 128, 256, 512 with
    two blocks per stage); the default is a quarter of that, enough for 84x84 crops.
    ``pool`` reads the last feature map: ``spatial_softmax`` (``num_keypoints``
    expected positions, the diffusion-policy default) or ``flatten`` (a 1x1 conv to
    ``num_keypoints // 2`` channels, flattened). ``stem_stride`` 4 replaces the
    stride-2 3x3 stem with a 4x4 patch embedding (4x fewer pixels in every stage).
    """

    def __init__(
        self,
        image_size: int = 96,
        crop_size: int = 84,
        channels: Sequence[int] = (16, 32, 64, 128),
        blocks_per_stage: int = 2,
        num_keypoints: int = 32,
        out_dim: int = 64,
        cond_dim: int = 0,
        pool: str = "spatial_softmax",
        stem_stride: int = 2,
    ) -> None:
        if not 0 < crop_size <= image_size:
            raise ValueError(f"crop_size must be in (0, image_size={image_size}], got {crop_size}")
        if pool not in VISION_POOLS:
            raise ValueError(f"unknown vision pool {pool!r}; valid: {', '.join(VISION_POOLS)}")
        super().__init__(image_size, crop_size)
        if stem_stride not in (2, 4):
            raise ValueError(f"stem_stride must be 2 or 4, got {stem_stride}")
        # Stride 4 is a 4x4 patch embedding: a quarter of the stride-2 stem's later cost.
        stem = (nn.Conv2d(3, channels[0], 3, stride=2, padding=1, bias=False) if stem_stride == 2
                else nn.Conv2d(3, channels[0], 4, stride=4, bias=False))
        stages: list[nn.Module] = [
            stem,
            _group_norm(channels[0]),
            nn.ReLU(),
        ]
        width = channels[0]
        film: dict[str, nn.Linear] = {}
        for index, stage_width in enumerate(channels):
            for block in range(blocks_per_stage):
                stride = 2 if index > 0 and block == 0 else 1
                stages.append(ResidualBlock(width, stage_width, stride))
                width = stage_width
            if cond_dim > 0:  # FiLM after the stage's last block: (scale, shift) per channel
                film[str(len(stages) - 1)] = nn.Linear(cond_dim, 2 * stage_width)
        for layer in film.values():
            nn.init.zeros_(layer.weight)
            nn.init.zeros_(layer.bias)
        self.backbone = nn.Sequential(*stages)
        self.film = nn.ModuleDict(film)
        self.cond_dim = int(cond_dim)
        if pool == "flatten":
            with torch.no_grad():
                _, _, height, width_px = nn.Sequential(*stages)(torch.zeros(1, 3, crop_size, crop_size)).shape
            self.pool: nn.Module = FlattenHead(width, max(1, num_keypoints // 2), height, width_px)
            self.head = nn.Sequential(nn.Linear(self.pool.out_dim, out_dim), nn.LayerNorm(out_dim), nn.Mish())
        else:
            self.pool = SpatialSoftmax(width, num_keypoints)
            self.head = nn.Sequential(nn.Linear(2 * num_keypoints, out_dim), nn.Mish())
        self.out_dim = int(out_dim)
        self.channels_last = False  # set_channels_last: the backbone's weights and input channels-last
        # this encoder through torch.compile with its weights frozen in, for inference with autograd
        # off (a diffusion policy's compile_inference; CompiledCall)
        self.compiled_forward = CompiledCall(self, "the image encoder", frozen=True)

    def forward(self, images: torch.Tensor, cond: torch.Tensor | None = None) -> torch.Tensor:
        """``images`` uint8 ``[N, H, W, 3]``; ``cond`` ``[N, cond_dim]`` when built with ``cond_dim > 0``."""
        if self.cond_dim and (cond is None or cond.shape != (images.shape[0], self.cond_dim)):
            got = None if cond is None else tuple(cond.shape)
            raise ValueError(f"this encoder is FiLM-conditioned: needs cond [{images.shape[0]}, {self.cond_dim}], got {got}")
        x = self.image_input(images)  # channels-last strides, NCHW under CPU autocast (image_input)
        if self.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        for index, layer in enumerate(self.backbone):
            x = layer(x)
            film = self.film[str(index)] if str(index) in self.film else None
            if film is not None:
                scale, shift = film(cond).unsqueeze(-1).unsqueeze(-1).chunk(2, dim=1)
                x = x * (1.0 + scale) + shift
        return self.head(self.pool(x))


def set_channels_last(module: nn.Module, enabled: bool) -> None:
    """Store the 2-D convolution weights of every :class:`VisionEncoder` inside ``module``
    channels-last (``enabled``) or contiguous, and feed them inputs to match: the same outputs
    either way. At batch 1 on CPU a ResNet-18-wide encoder at 84 px ran 1.5x faster
    channels-last (12.3 against 8.0 ms); the presets' quarter-width encoders ran the same, and so
    did training at batch 64 (docs/benchmarks.md). Parameters keep their identity (only their
    storage order changes), and saving makes every tensor contiguous."""
    memory_format = torch.channels_last if enabled else torch.contiguous_format
    for layer in module.modules():
        if isinstance(layer, VisionEncoder) and layer.channels_last != bool(enabled):
            layer.channels_last = bool(enabled)
            layer.backbone.to(memory_format=memory_format)
