"""The image input shared by the camera encoders: uint8 ``[N, H, W, 3]`` in, a random
crop per image in training and the centre crop in eval, scaled to [-1, 1] channels-first.

Random crops are the augmentation of the diffusion-policy recipe; eval uses the
centre so that a policy sees the same view every time.
"""

from __future__ import annotations

import torch
from torch import nn


class CroppingImageModule(nn.Module):
    """Base of modules that read square uint8 images of ``image_size`` cropped to ``crop_size``."""

    def __init__(self, image_size: int, crop_size: int) -> None:
        super().__init__()
        self.image_size = int(image_size)
        self.crop_size = int(crop_size)

    def crop(self, images: torch.Tensor) -> torch.Tensor:
        """Random crop per image in training mode, centre crop in eval mode (uint8 in, uint8 out)."""
        n, h, w, _ = images.shape
        if (h, w) != (self.image_size, self.image_size):
            raise ValueError(f"expected images of {self.image_size}x{self.image_size}, got {h}x{w}")
        c = self.crop_size
        if c == h:
            return images
        if not self.training:
            top, left = (h - c) // 2, (w - c) // 2
            return images[:, top : top + c, left : left + c]
        tops = torch.randint(0, h - c + 1, (n,), device=images.device)
        lefts = torch.randint(0, w - c + 1, (n,), device=images.device)
        offsets = torch.arange(c, device=images.device)
        rows = (tops[:, None] + offsets)[:, :, None]  # [N, c, 1]
        cols = (lefts[:, None] + offsets)[:, None, :]  # [N, 1, c]
        return images[torch.arange(n, device=images.device)[:, None, None], rows, cols]

    def image_input(self, images: torch.Tensor) -> torch.Tensor:
        """Checked, cropped images as float ``[N, 3, crop_size, crop_size]`` in [-1, 1]: strided
        channels-last (the permuted frames, the fastest fp32 layout on CPU), or contiguous (NCHW)
        under CPU autocast, where bf16 convolutions and GroupNorm run fastest: a bf16 training
        step of each camera encoder measured took 0.59-0.71x of the fp32 step's time NCHW,
        0.67-1.27x channels-last; bf16 GroupNorm alone 4.3-5.9x slower channels-last
        (benchmarks/bench_encoder_layout.py; docs/benchmarks.md)."""
        if images.dtype != torch.uint8 or images.ndim != 4 or images.shape[-1] != 3:
            raise ValueError(f"expected uint8 images [N, H, W, 3], got {images.dtype} {tuple(images.shape)}")
        x = self.crop(images).permute(0, 3, 1, 2).float() / 127.5 - 1.0
        if x.device.type == "cpu" and torch.is_autocast_enabled("cpu"):
            x = x.contiguous()
        return x
