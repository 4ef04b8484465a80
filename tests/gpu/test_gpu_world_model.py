"""The GPU world-model preset (gpu_128) trains a bf16 step and imagines a step on CUDA."""

import pytest
import torch
from gpu_fixtures import CONFIGS, CUDA
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from robot_learn.world_models import VideoWorldModel, WorldModelConfig


@pytest.mark.gpu
@pytest.mark.parametrize("size", [96, 128])
def test_gpu_world_model_preset_trains_a_bf16_step_and_imagines_on_cuda(size):
    with initialize_config_dir(config_dir=str(CONFIGS.parent), version_base=None):
        cfg = compose(config_name="wm_train", overrides=["world_model=gpu_128", f"world_model.image_size={size}"])
    config = WorldModelConfig(**OmegaConf.to_container(cfg.world_model, resolve=True))
    torch.manual_seed(0)
    model = VideoWorldModel(config).to(CUDA).train()
    b, k = 32, config.history
    frames = torch.randint(0, 255, (b, k + 1, size, size, 3), dtype=torch.uint8, device=CUDA)
    batch = {"obs": {"images": {config.camera: frames}, "state": torch.randn(b, k + 1, config.state_dim, device=CUDA)},
             "action": torch.randn(b, k, config.action_dim, device=CUDA), "t": torch.ones(b, dtype=torch.long, device=CUDA)}
    optimiser = torch.optim.AdamW(model.parameters(), lr=1e-4)
    with torch.autocast(CUDA.type, dtype=torch.bfloat16):
        loss = model.compute_loss(batch)["loss"]
    loss.backward()
    optimiser.step()
    assert torch.isfinite(loss)
    out = model.eval().predict_next(frames[:, :k], batch["obs"]["state"][:, :k], batch["action"][:, 0])
    assert out["frame"].shape == (b, size, size, 3) and torch.isfinite(out["frame"]).all()
