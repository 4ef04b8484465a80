"""bf16 autocast on CUDA for both policy families (pixel presets, frame encoder live):
training steps give finite losses and gradients and learn, sampling stays in range."""

import numpy as np
import pytest
import torch
from gpu_fixtures import ACTION_DIM, CUDA, pixel_obs, tiny_pixel_policy

from robot_learn.policies import to_torch

pytestmark = pytest.mark.gpu
FAMILIES = ["diffusion", "discrete_diffusion"]


def _training_batch(policy, batch: int = 8, seed: int = 0) -> dict:
    """A sampler-layout batch on the GPU: frames (no cached features), state, instruction, actions."""
    obs = pixel_obs(batch, steps=policy.obs_horizon, seed=seed)
    actions = np.random.default_rng(seed).uniform(-3, 5, size=(batch, policy.action_horizon, ACTION_DIM))
    return to_torch({"obs": {"state": obs["state"], "images": obs["images"]}, "action": actions.astype(np.float32),
                     "instruction": obs["instruction"]}, CUDA)


def _bf16():
    return torch.autocast(CUDA.type, dtype=torch.bfloat16)


@pytest.mark.parametrize("family", FAMILIES)
def test_a_bf16_training_step_gives_finite_loss_and_gradients_and_leaves_the_frame_encoder_frozen(family):
    policy = tiny_pixel_policy(family).to(CUDA).train()
    with _bf16():
        loss = policy.compute_loss(_training_batch(policy))["loss"]
    assert loss.dtype == torch.float32 and torch.isfinite(loss), loss
    loss.backward()
    trainable = [(n, p) for n, p in policy.named_parameters() if p.requires_grad]
    bad = [n for n, p in trainable if p.grad is not None and not torch.isfinite(p.grad).all()]
    assert not bad, f"non-finite gradients in {bad[:5]}"
    assert sum(float(p.grad.abs().sum()) for _, p in trainable if p.grad is not None) > 0
    assert all(p.grad is None for p in policy.frame_encoder.parameters())


@pytest.mark.parametrize("family", FAMILIES)
def test_the_bf16_loss_agrees_with_the_fp32_loss_on_the_same_random_draws(family):
    policy = tiny_pixel_policy(family).to(CUDA).train()
    batch = _training_batch(policy)
    losses = {}
    for name, context in (("fp32", torch.autocast(CUDA.type, enabled=False)), ("bf16", _bf16())):
        torch.manual_seed(7)  # the same noise, timesteps and masks for both
        with context:
            losses[name] = policy.compute_loss(batch)["loss"].item()
    assert losses["bf16"] == pytest.approx(losses["fp32"], rel=0.1), losses


@pytest.mark.parametrize("family", FAMILIES)
def test_training_under_bf16_autocast_lowers_the_loss(family):
    policy = tiny_pixel_policy(family).to(CUDA).train()
    batch = _training_batch(policy, batch=32)
    optimiser = torch.optim.AdamW([p for p in policy.parameters() if p.requires_grad], lr=2e-3, weight_decay=0.0)
    torch.manual_seed(0)
    losses = []
    for _ in range(200):
        with _bf16():
            loss = policy.compute_loss(batch)["loss"]
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        optimiser.step()
        losses.append(loss.item())
    assert np.isfinite(losses).all()
    assert np.mean(losses[-20:]) < 0.7 * np.mean(losses[:20]), (losses[:3], losses[-3:])


@pytest.mark.parametrize("family", FAMILIES)
def test_sampling_under_bf16_autocast_gives_finite_float32_actions_within_the_action_range(family):
    policy = tiny_pixel_policy(family).to(CUDA).eval()
    obs = to_torch(pixel_obs(4, steps=policy.obs_horizon), CUDA)
    with _bf16():
        chunk = policy.predict_action_chunk(obs, generator=torch.Generator(device=CUDA).manual_seed(0))
    assert chunk.shape == (4, policy.action_horizon, ACTION_DIM)
    assert chunk.dtype == torch.float32 and chunk.device.type == CUDA.type
    assert torch.isfinite(chunk).all()
    # Unnormalised into the statistics' range [-3, 5].
    assert float(chunk.min()) >= -3.0 - 1e-3 and float(chunk.max()) <= 5.0 + 1e-3
