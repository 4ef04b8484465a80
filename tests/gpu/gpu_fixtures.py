"""Tiny pixel policies and helpers shared by the GPU tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

from robot_learn.policies import make_policy
from robot_learn.policies.diffusion import diffusion_pixels_config
from robot_learn.policies.discrete_diffusion import discrete_diffusion_pixels_config

CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "policy"
INSTRUCTIONS = ("put the red cube in the bin", "put the blue cube in the bin")
CUDA = torch.device("cuda")
STATE_DIM, ACTION_DIM, IMAGE = 10, 5, 32
# A two-camera frame encoder small enough to build and run in a second.
TINY_FRAMES = dict(cameras=["front", "wrist"], image_size=IMAGE, channels=[8, 16], num_keypoints=8, camera_dim=16,
                   feature_dim=12, vocab=["put", "the", "red", "blue", "cube", "in", "bin"], text_dim=8,
                   label_names=["move_x", "move_y"])


def stats_for(config) -> dict[str, dict[str, np.ndarray]]:
    """Store-style statistics for every low-dim key of ``config`` and a 5-D action in raw
    ranges away from [-1, 1], so the normalisers do real work."""
    def ranges(dim: int) -> dict[str, np.ndarray]:
        low, high = np.full(dim, -3.0, np.float32), np.full(dim, 5.0, np.float32)
        return {"min": low, "max": high, "q01": low, "q99": high, "mean": (low + high) / 2, "std": (high - low) / 4}

    return {key: ranges(dim) for key, dim in (*config.state_dims.items(), ("action", config.action_dim))}


def tiny_pixel_policy(family: str, **changes) -> nn.Module:
    """A pixel preset (``diffusion`` or ``discrete_diffusion``) with the tiny frame encoder."""
    torch.manual_seed(0)
    if family == "diffusion":
        config = diffusion_pixels_config(frame_encoder=TINY_FRAMES, down_dims=[32, 64], state_hidden_dims=[32],
                                         state_feature_dim=16, timestep_embed_dim=32, action_horizon=8,
                                         execute_horizon=4, **changes)
    else:
        config = discrete_diffusion_pixels_config(frame_encoder=TINY_FRAMES, hidden_dim=32, num_layers=2, num_heads=2,
                                                  num_bins=32, decoding_rounds=4, **changes)
    return make_policy(family, config, stats_for(config), instructions=INSTRUCTIONS)


def pixel_obs(batch: int, steps: int | None = None, seed: int = 0) -> dict:
    """Numpy observations a pixel policy deploys on: cameras, ``state`` and the instruction
    (with a time dim of ``steps`` when given, as in a training batch)."""
    rng = np.random.default_rng(seed)
    lead = (batch,) if steps is None else (batch, steps)
    return {"state": rng.uniform(-3, 5, size=(*lead, STATE_DIM)).astype(np.float32),
            "images": {c: rng.integers(0, 256, size=(*lead, IMAGE, IMAGE, 3), dtype=np.uint8)
                       for c in TINY_FRAMES["cameras"]},
            "instruction": [INSTRUCTIONS[i % 2] for i in range(batch)]}


def off_device(module: nn.Module, device: torch.device) -> list[str]:
    """Names of the parameters and buffers of ``module`` that are not on ``device``."""
    tensors = [*module.named_parameters(), *module.named_buffers()]
    return [f"{name} ({t.device})" for name, t in tensors if t.device.type != device.type]
