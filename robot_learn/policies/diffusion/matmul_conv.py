"""``MatmulConv1d``: the U-Net's ``nn.Conv1d``, computed at inference as one matrix product.

At batch 1 PyTorch's CPU heuristic sends the U-Net's convolutions (5-512 channels,
length 4-16, kernel 1-5) to its slow im2col kernel instead of oneDNN; that kernel took
about 60% of an action chunk. In eval mode, with ``matmul_inference`` on, this module
instead cuts the zero-padded input into its ``kernel``-wide windows (a strided view,
then one copy) and multiplies them by the weight viewed as ``[out, in * kernel]``: the
same sums, up to 3x faster for the wide convolutions (256 channels at length 4), and
also faster than oneDNN at batches 4 to 256 on these short signals (1 thread; figures
from ``benchmarks/bench_pixel_latency.py --compare``). The weight is viewed, never
copied, so a parameter update or ``load_state_dict`` needs nothing rebuilt. Training
mode always runs ``nn.Conv1d``'s own path, so training is unchanged.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class MatmulConv1d(nn.Conv1d):
    """A ``nn.Conv1d`` (same parameters, same state-dict keys) with the matmul inference path above."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if self.groups != 1 or self.dilation != (1,) or self.padding_mode != "zeros" or isinstance(self.padding, str):
            raise ValueError("MatmulConv1d needs groups=1, dilation=1, zero padding given as a number; got "
                             f"groups={self.groups}, dilation={self.dilation}, padding={self.padding!r}, "
                             f"padding_mode={self.padding_mode!r}")
        self.matmul_inference = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training or not self.matmul_inference:
            return super().forward(x)
        batch, channels, _ = x.shape
        (kernel,), (stride,), (padding,) = self.kernel_size, self.stride, self.padding
        if padding:
            x = F.pad(x, (padding, padding))
        windows = x.unfold(2, kernel, stride)  # [B, C, L_out, K], a view
        length = windows.shape[2]
        rows = windows.permute(0, 2, 1, 3).reshape(batch * length, channels * kernel)  # (c, k) order, as the weight
        out = F.linear(rows, self.weight.reshape(self.out_channels, channels * kernel), self.bias)
        return out.view(batch, length, self.out_channels).transpose(1, 2)


def set_matmul_inference(module: nn.Module, enabled: bool) -> None:
    """Turn the matmul inference path of every :class:`MatmulConv1d` inside ``module`` on or off."""
    for layer in module.modules():
        if isinstance(layer, MatmulConv1d):
            layer.matmul_inference = bool(enabled)
