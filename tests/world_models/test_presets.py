"""Every world-model preset composes through `wm train`'s config, builds, and takes a
training step at its own frame size on the CPU (the GPU preset included: its speed on
a GPU is untested here)."""

from pathlib import Path

import pytest
import torch
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from robot_learn.world_models import VideoWorldModel, WorldModelConfig

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
PRESETS = sorted(p.stem for p in (CONFIGS / "world_model").glob("*.yaml"))


def preset(name, *overrides):
    with initialize_config_dir(config_dir=str(CONFIGS), version_base=None):
        cfg = compose(config_name="wm_train", overrides=[f"world_model={name}", *overrides])
    return WorldModelConfig(**OmegaConf.to_container(cfg.world_model, resolve=True))


@pytest.mark.parametrize("name", PRESETS)
def test_preset_builds_and_takes_a_training_step(name):
    config = preset(name)
    torch.manual_seed(0)
    model = VideoWorldModel(config)
    b, k, size = 2, config.history, config.image_size
    batch = {"obs": {"images": {config.camera: torch.randint(0, 255, (b, k + 1, size, size, 3), dtype=torch.uint8)},
                     "state": torch.randn(b, k + 1, config.state_dim)},
             "action": torch.randn(b, k, config.action_dim), "t": torch.ones(b, dtype=torch.long)}
    loss = model.compute_loss(batch)["loss"]
    loss.backward()
    assert torch.isfinite(loss) and model.unet.conv_out.weight.grad.abs().sum() > 0


def test_gpu_preset_covers_96_to_128_px():
    assert PRESETS == ["diffusion", "gpu_128", "residual", "residual_wide"]
    wide = preset("gpu_128")
    assert wide.image_size == 128 and wide.block_out_channels == (64, 128, 256)
    assert preset("gpu_128", "world_model.image_size=96").image_size == 96
    params = sum(p.numel() for p in VideoWorldModel(wide).parameters())
    default = sum(p.numel() for p in VideoWorldModel(preset("residual")).parameters())
    assert params > 10 * default, (params, default)

