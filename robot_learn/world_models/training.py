"""Training a :class:`VideoWorldModel` on an episode store with the policies' ``Trainer``.

The store's last ``held_out`` episodes are never trained on; ``wm eval`` measures
fidelity on them. The Trainer brings AdamW, the warmup-cosine schedule, diffusers'
``EMAModel``, logging and checkpoints; what it saves as ``policy/`` is the EMA world model.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from robot_learn.data import EpisodeStore, WindowSampler
from robot_learn.data.views import EpisodeView
from robot_learn.training import TrainConfig, Trainer
from robot_learn.world_models.configuration_world_model import WorldModelConfig
from robot_learn.world_models.modeling_world_model import VideoWorldModel


@dataclass
class StoreSplit:
    """Train and held-out views of one store (held out: its last ``held_out`` episodes)."""

    train: EpisodeView
    held_out: EpisodeView


def split_store(store: EpisodeStore, held_out: int) -> StoreSplit:
    """The last ``held_out`` episodes apart from the rest; ValueError when too few remain."""
    n = store.num_episodes
    if held_out < 1 or held_out >= n:
        raise ValueError(f"held_out={held_out} must be in [1, {n - 1}] for a store of {n} episodes")
    return StoreSplit(EpisodeView(store, range(n - held_out)), EpisodeView(store, range(n - held_out, n)))


def check_store_fits(store: EpisodeStore, config: WorldModelConfig) -> None:
    """ValueError unless the store records the model's cameras at its image size, state and action."""
    for camera in config.cameras:
        key = f"images/{camera}"
        if key not in store.keys:
            cams = sorted(k.split("/", 1)[1] for k in store.keys if k.startswith("images/"))
            raise ValueError(f"store {store.path} has no camera '{camera}'; its cameras: {cams or 'none'} "
                             f"(collect with cameras=[{','.join(config.cameras)}] image_size={config.image_size}; "
                             "wm train collects one when data.path names a new store)")
        shape = tuple(store.array(key).shape[1:])
        want = (config.image_size, config.image_size, 3)
        if shape != want:
            raise ValueError(f"store {store.path} has '{key}' frames of {shape}; the world model wants {want} "
                             f"(image_size={config.image_size})")
    for name, dim in (("state", config.state_dim), ("action", config.action_dim)):
        have = tuple(store.array(name).shape[1:])
        if have != (dim,):
            raise ValueError(f"store {store.path} has '{name}' of shape {have}; the world model's {name}_dim is {dim}")


def transition_stats(view: EpisodeView) -> dict[str, dict[str, np.ndarray]]:
    """Mean and std of state, action and the one-step state change within episodes."""
    stats = view.stats(["state", "action"])
    deltas = []
    store = view.store
    for start, end in zip(store.episode_starts[view.episodes], store.episode_ends[view.episodes]):
        states = np.asarray(store.array("state")[start:end], dtype=np.float32)
        deltas.append(np.diff(states, axis=0))
    delta = np.concatenate(deltas)
    stats["state_delta"] = {"mean": delta.mean(0), "std": delta.std(0)}
    return stats


def make_sampler(view: EpisodeView, config: WorldModelConfig, batch_size: int, seed: int = 0) -> WindowSampler:
    """Windows of ``history + 1`` frames and states (the last is the target) and ``history`` actions."""
    return WindowSampler(view, obs_keys=("state", *(f"images/{c}" for c in config.cameras)), action_key="action",
                         obs_horizon=config.history + 1, action_horizon=config.history,
                         batch_size=batch_size, seed=seed)


def train_world_model(store_path: str | Path, config: WorldModelConfig, train: TrainConfig,
                      held_out: int = 10) -> tuple[VideoWorldModel, dict[str, Any]]:
    """Train on ``store_path`` minus its last ``held_out`` episodes; returns the EMA model and
    the Trainer's final metrics. The model is saved to ``train.out_dir/policy``."""
    with EpisodeStore.open(store_path, mode="r") as store:
        check_store_fits(store, config)
        split = split_store(store, held_out)
        model = VideoWorldModel(config, stats=transition_stats(split.train))
        trainer = Trainer(model, make_sampler(split.train, config, train.batch_size, train.seed), train)
        metrics = trainer.fit()
    return trainer.ema_policy, metrics  # type: ignore[return-value]
