"""Small random-weight diffusion policies acting in the tabletop's pose layout
(x, y, z, yaw, gripper), with action statistics spanning the env's pose bounds."""

from __future__ import annotations

import numpy as np
import torch

from robot_learn.policies import DiffusionConfig, make_policy

POSE_LOW = np.array([-0.1, -0.35, 0.0, -np.pi, 0.0], np.float32)
POSE_HIGH = np.array([0.4, 0.35, 0.35, np.pi, 1.0], np.float32)
TARGET = (0.25, 0.1, 0.05)
BATCH, TO, TA = 8, 2, 8


def pose_policy(action_dim: int = 5, seed: int = 0, **changes):
    """A U-Net policy over ``state`` (3) with random weights (seeded), in eval mode."""
    low = np.resize(POSE_LOW, action_dim).astype(np.float32)
    high = np.resize(POSE_HIGH, action_dim).astype(np.float32)
    stats = {"action": {"min": low, "max": high},
             "state": {"min": -np.ones(3, np.float32), "max": np.ones(3, np.float32)}}
    config = DiffusionConfig(**{**dict(action_dim=action_dim, state_dims={"state": 3}, obs_horizon=TO, action_horizon=TA,
                                       execute_horizon=4, state_hidden_dims=[32], state_feature_dim=16,
                                       down_dims=[32, 64], timestep_embed_dim=32), **changes})
    torch.manual_seed(seed)
    return make_policy("diffusion", config, stats).eval()


def observations(batch: int = BATCH) -> dict[str, torch.Tensor]:
    """``batch`` distinct observation histories."""
    return {"state": torch.linspace(-1.0, 1.0, batch * TO * 3).reshape(batch, TO, 3)}


def seeded(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def end_distance(chunk: torch.Tensor, target=TARGET) -> float:
    """Mean distance (metres) of the chunk's last position to ``target``."""
    return float((chunk[:, -1, :3] - torch.tensor(target)).norm(dim=-1).mean())
