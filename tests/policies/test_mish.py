"""``robot_learn.policies.mish``: the sigmoid form of Mish against ``F.mish``."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from robot_learn.policies.mish import FAST_MIN_NUMEL, Mish, mish


def _inputs(dtype: torch.dtype) -> torch.Tensor:
    torch.manual_seed(0)
    x = torch.randn(64, 256, 4) * 4
    x.view(-1)[:9] = torch.tensor([-100.0, -30.0, -10.0, -1e-3, 0.0, 1e-3, 10.0, 30.0, 100.0])
    return x.to(dtype).requires_grad_(True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_values_and_gradients_match_f_mish(dtype):
    x = _inputs(dtype)
    assert x.numel() >= FAST_MIN_NUMEL  # the sigmoid path
    grad = torch.randn(x.shape, dtype=dtype)
    ours = Mish()(x)
    (ours_grad,) = torch.autograd.grad(ours, x, grad)
    ref_x = x.detach().clone().requires_grad_(True)
    ref = F.mish(ref_x)
    (ref_grad,) = torch.autograd.grad(ref, ref_x, grad)
    tol = 2e-6 if dtype == torch.float32 else 1e-12
    assert ours.dtype == dtype and ours_grad.dtype == dtype
    torch.testing.assert_close(ours, ref, atol=tol, rtol=tol)
    torch.testing.assert_close(ours_grad, ref_grad, atol=tol * 10, rtol=tol * 10)


def test_bf16_is_computed_in_float32_and_rounded_once():
    """Under bf16 autocast the activations arrive in bf16: the result is F.mish's own bf16 answer (one rounding)."""
    x = _inputs(torch.bfloat16)
    out = mish(x)
    assert out.dtype == torch.bfloat16
    exact = F.mish(x.detach().float())
    assert torch.equal(out, exact.to(torch.bfloat16))
    (grad,) = torch.autograd.grad(out.float().sum(), x)
    assert grad.dtype == torch.bfloat16 and torch.isfinite(grad).all()


def test_small_tensors_and_nan_keep_f_mish():
    small = torch.randn(1, 256, 4)  # batch-1 inference: F.mish's single kernel is faster there
    assert small.numel() < FAST_MIN_NUMEL and torch.equal(mish(small), F.mish(small))
    x = _inputs(torch.float32).detach()
    x.view(-1)[10] = float("nan")
    assert torch.isnan(mish(x).view(-1)[10]) and torch.isfinite(mish(x).view(-1)[11:]).all()


def test_policy_modules_use_it():
    from robot_learn.policies.diffusion.unet1d import ConditionalUnet1D

    unet = ConditionalUnet1D(action_dim=5, global_cond_dim=8)
    kinds = {type(m) for m in unet.modules() if isinstance(m, torch.nn.Mish)}
    assert kinds == {Mish}
