"""Device placement: a pixel policy moved to CUDA has every parameter and buffer there
(normalisers and frame encoder included) and acts on numpy observations."""

import copy

import pytest
import torch
from gpu_fixtures import ACTION_DIM, CUDA, pixel_obs, off_device, tiny_pixel_policy

from robot_learn.policies import to_torch

pytestmark = pytest.mark.gpu
FAMILIES = ["diffusion", "discrete_diffusion"]


@pytest.mark.parametrize("family", FAMILIES)
def test_moving_a_pixel_policy_to_cuda_moves_every_parameter_and_buffer(family):
    policy = tiny_pixel_policy(family)
    assert policy.frame_encoder is not None
    policy.to(CUDA)
    assert off_device(policy, CUDA) == []
    assert policy.device.type == CUDA.type
    # Spelled out: the frame encoder (weights and label statistics) and the normalisers.
    assert not off_device(policy.frame_encoder, CUDA)
    normalisers = [n for n, _ in policy.named_buffers() if "normal" in n or "tokenizer" in n]
    assert normalisers, sorted(n for n, _ in policy.named_buffers())


@pytest.mark.parametrize("family", FAMILIES)
def test_select_action_on_cuda_takes_numpy_observations_and_returns_gpu_actions(family):
    policy = tiny_pixel_policy(family).to(CUDA).eval()
    for _ in range(policy.execute_horizon + 1):  # past one chunk: a second prediction from the history
        action = policy.select_action(pixel_obs(3))
        assert action.shape == (3, ACTION_DIM) and action.device.type == CUDA.type
        assert torch.isfinite(action).all()


@pytest.mark.parametrize("family", FAMILIES)
def test_the_frame_features_on_cuda_match_the_cpu_features(family):
    policy = tiny_pixel_policy(family).eval()
    on_cpu = copy.deepcopy(policy)
    obs = pixel_obs(4, steps=policy.obs_horizon)
    want = on_cpu.with_frame_features(to_torch(obs))["features"]
    got = policy.to(CUDA).with_frame_features(to_torch(obs, CUDA))["features"]
    assert got.device.type == CUDA.type
    # TF32 convolutions on the GPU: close, not bit-equal.
    assert torch.allclose(got.cpu(), want, atol=2e-2), float((got.cpu() - want).abs().max())
