"""Tiny policy configs and a synthetic dataset shared by the policy tests."""

from __future__ import annotations

import numpy as np
import torch

from robot_learn.policies import DiffusionConfig

STATE_DIM, ENV_DIM, ACTION_DIM, TO, TA = 3, 4, 2, 2, 8


def tiny_config(**changes) -> DiffusionConfig:
    """A U-Net diffusion config small enough to train in seconds on one CPU thread."""
    base = dict(
        action_dim=ACTION_DIM,
        state_dims={"state": STATE_DIM, "env_state": ENV_DIM},
        obs_horizon=TO,
        action_horizon=TA,
        execute_horizon=4,
        state_hidden_dims=[32],
        state_feature_dim=16,
        down_dims=[32, 64],
        timestep_embed_dim=32,
        transformer_dim=32,
        transformer_layers=2,
        transformer_heads=2,
        vision_channels=[8, 16],
        vision_blocks_per_stage=1,
        num_keypoints=8,
        vision_feature_dim=16,
        image_size=24,
        crop_size=20,
        text_dim=16,
    )
    base.update(changes)
    return DiffusionConfig(**base)


def synthetic_windows() -> dict[str, np.ndarray]:
    """Four fixed windows whose action chunk is a smooth function of the state.

    Actions live in a raw range far from [-1, 1] so the normaliser matters.
    """
    rng = np.random.default_rng(0)
    states = rng.uniform(-1.0, 1.0, size=(4, STATE_DIM)).astype(np.float32)
    env = rng.uniform(0.0, 2.0, size=(4, ENV_DIM)).astype(np.float32)
    k = np.arange(TA, dtype=np.float32)
    actions = np.stack(
        [
            np.stack([0.3 + 0.1 * np.sin(0.4 * k + 3 * s[0]), 2.0 * s[1] + 0.2 * k * s[2]], axis=-1)
            for s in states
        ]
    ).astype(np.float32)
    return {
        "state": np.repeat(states[:, None], TO, axis=1),
        "env_state": np.repeat(env[:, None], TO, axis=1),
        "action": actions,
    }


def stats_of(windows: dict[str, np.ndarray]) -> dict[str, dict[str, np.ndarray]]:
    """EpisodeStore.stats-style dict computed from the windows."""
    out = {}
    for key in ("state", "env_state", "action"):
        flat = windows[key].reshape(-1, windows[key].shape[-1])
        out[key] = {
            "min": flat.min(0),
            "max": flat.max(0),
            "mean": flat.mean(0),
            "std": flat.std(0),
            "q01": np.quantile(flat, 0.01, axis=0).astype(np.float32),
            "q99": np.quantile(flat, 0.99, axis=0).astype(np.float32),
        }
    return out


def tensor_batch(windows: dict[str, np.ndarray], repeat: int = 1) -> dict:
    """Sampler-layout batch of tensors, each window repeated ``repeat`` times."""
    def rep(x):
        return torch.from_numpy(np.tile(x, (repeat,) + (1,) * (x.ndim - 1)))

    return {"obs": {"state": rep(windows["state"]), "env_state": rep(windows["env_state"])}, "action": rep(windows["action"])}
