"""``Mish``: ``nn.Mish`` evaluated through one sigmoid on large CPU tensors.

mish(x) = x tanh(softplus(x)). With s = sigmoid(x) and a = s (2 - s) = 1 - (1 - s)^2,
tanh(softplus(x)) = a / (2 - a), and the derivative is t + x s (1 - t^2) with t that
quotient. PyTorch's CPU kernel evaluates tanh and softplus per element, and its tanh is
the slow part: on 65k floats (a U-Net activation at batch 64, 2 threads) ``F.mish`` took
139 us and this form 55 us. Below ``FAST_MIN_NUMEL`` elements (batch-1 inference) one
``F.mish`` kernel beats the few elementwise ops here, and on other devices ``F.mish`` is
one fused kernel, so both keep it. Lower-precision inputs (bf16 autocast) are computed in
float32 and rounded once, as ``F.mish`` does; the values agree with it to float32
rounding.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.autograd.function import once_differentiable

FAST_MIN_NUMEL = 8192  # measured crossover with F.mish: about 4k elements (2 threads)


class _SigmoidMish(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        xf = x.to(torch.promote_types(x.dtype, torch.float32))
        s = torch.sigmoid(xf)
        a = torch.rsub(s, 2).mul_(s)
        t = a.div_(torch.rsub(a, 2))  # tanh(softplus(x))
        ctx.save_for_backward(xf, s, t)
        return (xf * t).to(x.dtype)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        xf, s, t = ctx.saved_tensors
        slope = torch.mul(t, t).neg_().add_(1).mul_(s).mul_(xf).add_(t)
        return (grad.to(slope.dtype) * slope).to(grad.dtype)


def mish(x: torch.Tensor) -> torch.Tensor:
    """``F.mish(x)``, through one sigmoid where that is faster (large CPU tensors)."""
    if x.device.type != "cpu" or x.numel() < FAST_MIN_NUMEL:
        return F.mish(x)
    return _SigmoidMish.apply(x)


class Mish(nn.Mish):
    """``nn.Mish`` (same repr, no parameters) computed by :func:`mish`."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return mish(x)
