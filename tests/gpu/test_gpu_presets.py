"""The GPU variants of the pixel presets: they build, deploy on the same keys as the CPU
presets (cameras, state, instruction), are larger, and (on CUDA) train a bf16 step."""

import numpy as np
import pytest
import torch
from gpu_fixtures import CONFIGS, CUDA, INSTRUCTIONS, stats_for
from hydra.utils import instantiate
from omegaconf import OmegaConf

from robot_learn.training.frame_pretraining import with_scene_labels
from robot_learn.policies import get_policy_class, make_policy, to_torch
from robot_learn.policies.diffusion import DiffusionConfig
from robot_learn.policies.discrete_diffusion import DiscreteDiffusionConfig
from robot_learn.policies.frame_encoder import FEATURES_KEY, FramePretrainConfig

PRESETS = [("diffusion_pixels_gpu", "diffusion_pixels", DiffusionConfig),
           ("discrete_diffusion_pixels_gpu", "discrete_diffusion_pixels", DiscreteDiffusionConfig)]
DEPLOYED = {"state": (10,), "images/front": (96, 96, 3), "images/wrist": (96, 96, 3)}


def _preset(name: str):
    """The YAML's config, with the scene label names the CLI fills in for the privileged encoder."""
    return with_scene_labels(instantiate(OmegaConf.load(CONFIGS / f"{name}.yaml")))


def _name(config) -> str:
    return "diffusion" if isinstance(config, DiffusionConfig) else "discrete_diffusion"


def _build(config):
    return make_policy(_name(config), config, stats_for(config), instructions=INSTRUCTIONS)


def _parameters(config) -> tuple[int, int]:
    """(whole policy, frame encoder) parameter counts, built on the meta device (no memory)."""
    with torch.device("meta"):
        policy = get_policy_class(_name(config))(config, instructions=INSTRUCTIONS)
    return (sum(p.numel() for p in policy.parameters()), sum(p.numel() for p in policy.frame_encoder.parameters()))


@pytest.mark.parametrize(("gpu_name", "cpu_name", "config_class"), PRESETS)
def test_gpu_pixel_preset_builds_a_policy_that_deploys_on_cameras_state_and_instruction(gpu_name, cpu_name,
                                                                                      config_class):
    config = _preset(gpu_name)
    assert isinstance(config, config_class)
    policy = _build(config)
    assert policy.obs_shapes == DEPLOYED
    assert set(policy.training_obs_keys) == {"state", FEATURES_KEY}
    assert policy.obs_shapes == _build(_preset(cpu_name)).obs_shapes


@pytest.mark.parametrize(("gpu_name", "cpu_name", "config_class"), PRESETS)
def test_gpu_pixel_preset_is_larger_than_the_cpu_preset_and_pretrains_on_more_scenes(gpu_name, cpu_name,
                                                                                   config_class):
    gpu, cpu = _preset(gpu_name), _preset(cpu_name)
    (gpu_total, gpu_encoder), (cpu_total, cpu_encoder) = _parameters(gpu), _parameters(cpu)
    assert gpu_encoder > cpu_encoder and gpu_total - gpu_encoder > cpu_total - cpu_encoder
    gpu_pretrain, cpu_pretrain = FramePretrainConfig(**gpu.frame_pretraining), FramePretrainConfig(**cpu.frame_pretraining)
    assert gpu_pretrain.resets > cpu_pretrain.resets and gpu_pretrain.steps > cpu_pretrain.steps


@pytest.mark.gpu
@pytest.mark.parametrize("gpu_name", [gpu_name for gpu_name, _, _ in PRESETS])
def test_gpu_pixel_preset_trains_a_bf16_step_on_cached_features_and_acts_from_frames(gpu_name):
    torch.manual_seed(0)
    policy = _build(_preset(gpu_name)).to(CUDA).train()
    rng = np.random.default_rng(0)
    batch, steps = 64, policy.obs_horizon
    features = policy.config.state_dims[FEATURES_KEY]
    training = to_torch({"obs": {"state": rng.uniform(-3, 5, (batch, steps, 10)).astype(np.float32),
                                 FEATURES_KEY: rng.normal(size=(batch, steps, features)).astype(np.float32)},
                         "action": rng.uniform(-3, 5, (batch, policy.action_horizon, 5)).astype(np.float32),
                         "instruction": [INSTRUCTIONS[i % 2] for i in range(batch)]}, CUDA)
    optimiser = torch.optim.AdamW([p for p in policy.parameters() if p.requires_grad], lr=1e-4)
    with torch.autocast(CUDA.type, dtype=torch.bfloat16):
        loss = policy.compute_loss(training)["loss"]
    loss.backward()
    optimiser.step()
    assert torch.isfinite(loss)
    assert all(torch.isfinite(p).all() for p in policy.parameters())

    policy.eval()
    frames = {"state": rng.uniform(-3, 5, (2, 10)).astype(np.float32), "instruction": list(INSTRUCTIONS),
              "images": {c: rng.integers(0, 256, (2, 96, 96, 3), dtype=np.uint8) for c in ("front", "wrist")}}
    action = policy.select_action(frames)
    assert action.shape == (2, 5) and action.device.type == CUDA.type and torch.isfinite(action).all()
