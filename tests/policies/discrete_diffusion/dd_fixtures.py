"""Tiny discrete-diffusion configs and synthetic windows for the tests in this folder."""

from __future__ import annotations

import numpy as np
import torch

from robot_learn.policies.discrete_diffusion import DiscreteDiffusionConfig, DiscreteDiffusionPolicy

STATE_DIM, ACTION_DIM, H = 3, 2, 4
INSTRUCTIONS = ("move the red cube", "move the blue cube")


def tiny_config(**changes) -> DiscreteDiffusionConfig:
    """Small enough to train in seconds on one CPU thread."""
    base = dict(
        action_dim=ACTION_DIM, state_dims={"state": STATE_DIM}, camera_names=[], obs_horizon=1, action_horizon=H,
        execute_horizon=H, num_bins=32, hidden_dim=32, num_layers=2, num_heads=2, mlp_ratio=2.0,
        use_language=True, vocab=[], decoding_rounds=4, token_temperature=0.0, image_size=24, crop_size=20,
        stem_channels=[8], patch_size=5,
    )
    base.update(changes)
    return DiscreteDiffusionConfig(**base)


def synthetic_windows(n: int = 4, seed: int = 0) -> dict:
    """``n`` windows whose chunk is a smooth function of the state, in a raw range far from [-1, 1]."""
    rng = np.random.default_rng(seed)
    states = rng.uniform(-1.0, 1.0, size=(n, STATE_DIM)).astype(np.float32)
    k = np.arange(H, dtype=np.float32)
    actions = np.stack([np.stack([3.0 + 0.5 * np.sin(0.5 * k + 2 * s[0]), -2.0 + s[1] + 0.3 * k * s[2]], -1) for s in states])
    return {"state": states[:, None], "action": actions.astype(np.float32),
            "instruction": [INSTRUCTIONS[i % 2] for i in range(n)]}


def stats_of(windows: dict) -> dict:
    """EpisodeStore.stats-style dict of the windows."""
    out = {}
    for key in ("state", "action"):
        flat = windows[key].reshape(-1, windows[key].shape[-1])
        out[key] = {"min": flat.min(0), "max": flat.max(0), "mean": flat.mean(0), "std": flat.std(0),
                    "q01": np.quantile(flat, 0.01, axis=0).astype(np.float32),
                    "q99": np.quantile(flat, 0.99, axis=0).astype(np.float32)}
    return out


def batch_of(windows: dict, repeat: int = 1) -> dict:
    """Sampler-layout tensor batch, each window repeated ``repeat`` times."""
    state = torch.from_numpy(np.repeat(windows["state"], repeat, 0))
    return {"obs": {"state": state}, "action": torch.from_numpy(np.repeat(windows["action"], repeat, 0)),
            "instruction": [text for text in windows["instruction"] for _ in range(repeat)]}


def train(policy: DiscreteDiffusionPolicy, batch: dict, steps: int, lr: float = 3e-3, seed: int = 0) -> list[float]:
    """Plain Adam steps on one fixed batch; returns the losses."""
    torch.manual_seed(seed)
    optimiser = torch.optim.AdamW(policy.parameters(), lr=lr, weight_decay=0.0)
    policy.train()
    losses = []
    for _ in range(steps):
        loss = policy.compute_loss(batch)["loss"]
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        losses.append(float(loss.detach()))
    policy.eval()
    return losses
