"""A real episode store with learnable synthetic episodes, and a tiny real DiffusionPolicy.

Shared by the trainer tests and by ``train_tiny.py`` (run in subprocesses:
killed-and-resumed runs, torchrun/DDP).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from robot_learn.data import EpisodeStore, WindowSampler
from robot_learn.policies import DiffusionPolicy, diffusion_state_config

OBS_KEYS = ("state", "env_state")
OBS_HORIZON, ACTION_HORIZON = 2, 8


def make_episode(length: int, seed: int) -> dict[str, np.ndarray]:
    """An end-effector sweeping a smooth curve; the action is the next pose plus a gripper flag.

    The action is a deterministic function of the observed state, so a policy can
    learn it and the diffusion loss falls well below its untrained value.
    """
    rng = np.random.default_rng(seed)
    t = np.arange(length, dtype=np.float32)
    phase, speed = rng.uniform(0, 2 * np.pi), rng.uniform(0.1, 0.2)
    ee = np.stack(
        [0.2 + 0.05 * np.cos(speed * t + phase), 0.05 * np.sin(speed * t + phase),
         0.1 + 0.002 * t, 0.3 * np.sin(0.5 * speed * t)], axis=-1
    ).astype(np.float32)
    joints = np.tanh(ee @ rng.normal(size=(4, 6)).astype(np.float32))
    state = np.concatenate([joints, ee], axis=-1).astype(np.float32)
    env_state = np.tile(rng.normal(size=14).astype(np.float32), (length, 1))
    nxt = np.concatenate([ee[1:], ee[-1:]], axis=0)
    gripper = (t > length / 2).astype(np.float32)[:, None]
    action = np.concatenate([nxt, gripper], axis=-1).astype(np.float32)
    return {
        "state": state, "env_state": env_state, "action": action,
        "reward": np.zeros(length, np.float32), "progress": np.linspace(0, 1, length, dtype=np.float32),
        "phase": np.zeros(length, np.int64),
    }


def build_store(path: str | Path, num_episodes: int = 6, length: int = 40, nan_action_episode: int | None = None,
                cameras: tuple[str, ...] = (), image_size: int = 96) -> EpisodeStore:
    """Create a store at ``path`` with ``num_episodes`` synthetic demos.

    ``nan_action_episode`` puts a NaN into that episode's ``action`` (step 3, dim 1).
    """
    store = EpisodeStore.create(path)
    for i in range(num_episodes):
        steps = make_episode(length, seed=i)
        rng = np.random.default_rng(1000 + i)
        for cam in cameras:
            steps[f"images/{cam}"] = rng.integers(0, 256, size=(length, image_size, image_size, 3), dtype=np.uint8)
        if i == nan_action_episode:
            steps["action"][3, 1] = np.nan
        store.append_episode(steps, {"task": "stack", "instruction": f"put the red cube on the {['blue', 'green'][i % 2]} cube",
                                     "success": True, "seed": i, "source": "demo"})
    return store


def make_tiny_policy(store: EpisodeStore, seed: int = 0) -> DiffusionPolicy:
    """State-only U-Net diffusion policy, down_dims (16, 32), horizon 8 (trains in seconds)."""
    import torch

    torch.manual_seed(seed)
    config = diffusion_state_config(
        obs_horizon=OBS_HORIZON, action_horizon=ACTION_HORIZON, execute_horizon=4,
        down_dims=[16, 32], state_hidden_dims=[32], state_feature_dim=16, timestep_embed_dim=16,
        unet_groups=4, num_train_timesteps=50, num_inference_steps=5,
    )
    return DiffusionPolicy(config, stats=store.stats(["action", *OBS_KEYS]))


def make_sampler(store: EpisodeStore, batch_size: int, seed: int) -> WindowSampler:
    return WindowSampler(store, obs_keys=OBS_KEYS, action_key="action", obs_horizon=OBS_HORIZON,
                         action_horizon=ACTION_HORIZON, batch_size=batch_size, seed=seed)
