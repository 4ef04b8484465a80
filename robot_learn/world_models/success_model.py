"""A learned success and progress model: one camera frame + proprioception + instruction.

It labels imagined rollouts in :class:`~robot_learn.world_models.env.WorldModelEnv`
through the same ``score`` method as :class:`~robot_learn.world_models.scorer.NearestFrameScorer`,
so either (or an external judge) can be plugged in. A small ResNet (the policies'
``VisionEncoder``, FiLM on the instruction's words) and an MLP over its keypoints
and the normalised state predict the frame's task progress (regression on the
stored ``progress``) and whether the task has succeeded there (the last stored
frame of a successful episode, as the nearest-frame scorer counts it; every other
frame is a negative). Checkpoints use the policies' format (``config.yaml`` +
``model.safetensors``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from robot_learn.data.views import EpisodeView
from robot_learn.policies.text_encoder import VocabTextEncoder, build_vocab
from robot_learn.policies.vision_encoder import VisionEncoder


@dataclass
class SuccessModelConfig:
    """Settings of :class:`SuccessModel` (YAML-serialisable)."""

    camera: str = "front"
    image_size: int = 64
    state_dim: int = 10
    vocab: list[str] = field(default_factory=list)
    channels: list[int] = field(default_factory=lambda: [16, 32])
    num_keypoints: int = 16
    hidden: int = 128
    text_dim: int = 32
    threshold: float = 0.5  # success probability above which a frame counts as a success
    state_mean: list[float] = field(default_factory=list)
    state_std: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not 0.0 < self.threshold < 1.0:
            raise ValueError(f"threshold must be in (0, 1), got {self.threshold}")


class SuccessModel(nn.Module):
    """Frame + state + instruction -> (success logit, progress in [0, 1])."""

    name = "success_model"

    def __init__(self, config: SuccessModelConfig) -> None:
        super().__init__()
        self.config = config
        self.text = VocabTextEncoder(config.vocab, dim=config.text_dim) if config.vocab else None
        cond = config.text_dim if self.text is not None else 0
        self.vision = VisionEncoder(config.image_size, config.image_size, config.channels, 1, config.num_keypoints,
                                    config.hidden, cond, stem_stride=2)
        self.head = nn.Sequential(nn.Linear(config.hidden + config.state_dim, config.hidden), nn.Mish(),
                                  nn.Linear(config.hidden, 2))
        mean = config.state_mean or [0.0] * config.state_dim
        std = config.state_std or [1.0] * config.state_dim
        self.register_buffer("state_mean", torch.tensor(mean, dtype=torch.float32), persistent=False)
        self.register_buffer("state_std", torch.tensor(std, dtype=torch.float32), persistent=False)

    def forward(self, frames: torch.Tensor, states: torch.Tensor,
                instructions: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """``frames`` uint8 ``[N, H, W, 3]``, ``states`` ``[N, state_dim]``: success logits
        ``[N]`` and progress ``[N]`` in [0, 1]."""
        cond = self.text(instructions) if self.text is not None else None
        features = self.vision(frames, cond)
        state = (states.float() - self.state_mean) / self.state_std
        out = self.head(torch.cat([features, state], dim=1))
        return out[:, 0], torch.sigmoid(out[:, 1])

    @torch.inference_mode()
    def score(self, frame: np.ndarray, state: np.ndarray, instruction: str) -> tuple[bool, float]:
        """One step's ``(success, progress)``: the ``RolloutScorer`` protocol (a trained or
        loaded model is in eval mode)."""
        logit, progress = self(torch.as_tensor(np.asarray(frame))[None], torch.as_tensor(np.asarray(state))[None],
                               [instruction])
        return bool(torch.sigmoid(logit)[0] > self.config.threshold), float(progress[0])

    def save(self, directory: str | Path) -> None:
        from robot_learn.policies.checkpoint import save_policy

        save_policy(self, directory)  # type: ignore[arg-type]  # same format: name, config, weights


def load_success_model(directory: str | Path) -> SuccessModel:
    """A saved :class:`SuccessModel` in eval mode; a missing or corrupt file is a ValueError naming it."""
    from safetensors.torch import load_file

    from robot_learn.policies.checkpoint import CONFIG_FILE, WEIGHTS_FILE, config_from_dict
    from robot_learn.policies.checkpoint_yaml import read_checkpoint_yaml

    directory = Path(directory)
    document = read_checkpoint_yaml(
        directory / CONFIG_FILE, ValueError, kind="success model",
        problem=lambda d: None if isinstance(d, dict) and d.get("type") == SuccessModel.name
        else f"holds a '{d.get('type') if isinstance(d, dict) else None}' checkpoint, not a '{SuccessModel.name}'")
    model = SuccessModel(config_from_dict(SuccessModelConfig, document.get("config") or {}))
    try:
        model.load_state_dict(load_file(str(directory / WEIGHTS_FILE)), strict=True)
    except Exception as error:  # safetensors' own errors for bad headers; RuntimeError for shapes
        raise ValueError(f"{directory / WEIGHTS_FILE} is missing, corrupt or does not fit {CONFIG_FILE}: "
                         f"{error}") from None
    return model.eval()


@dataclass
class SuccessLabels:
    """Every frame of a view with its training targets."""

    frames: np.ndarray      # uint8 [N, H, W, 3]
    states: np.ndarray      # float32 [N, state_dim]
    instructions: list[str]
    progress: np.ndarray    # float32 [N]
    success: np.ndarray     # bool [N]: the last frame of a successful episode
    episode: np.ndarray     # int [N]: index into the view's episodes

    def joined(self, other: "SuccessLabels") -> "SuccessLabels":
        """These frames followed by ``other``'s (its episode indices shifted past these)."""
        return SuccessLabels(np.concatenate([self.frames, other.frames]), np.concatenate([self.states, other.states]),
                             [*self.instructions, *other.instructions], np.concatenate([self.progress, other.progress]),
                             np.concatenate([self.success, other.success]),
                             np.concatenate([self.episode, other.episode + int(self.episode.max(initial=-1)) + 1]))


def success_labels(view: EpisodeView, camera: str, last: int = 1) -> SuccessLabels:
    """Frames, states, instructions and targets of every step of ``view``; the ``last`` frames
    of each successful episode are its success frames (1: only the frame the episode ended on)."""
    store = view.store
    key = f"images/{camera}"
    if key not in store.keys:
        raise ValueError(f"store {store.path} has no '{key}'; it holds {', '.join(store.keys)}")
    lengths = np.asarray([int(store.episode_ends[e] - store.episode_starts[e]) for e in view.episodes])
    meta = store.meta
    episode = np.repeat(np.arange(len(lengths)), lengths)
    success = np.zeros(int(lengths.sum()), dtype=bool)
    won = np.asarray(meta["success"], dtype=bool)[list(view.episodes)]
    ends = np.cumsum(lengths)
    for back in range(1, max(1, int(last)) + 1):
        success[np.maximum(ends - back, ends - lengths)[won]] = True
    words = [str(meta["instruction"][e]) for e in view.episodes]
    return SuccessLabels(np.asarray(view.read(key)), view.read("state").astype(np.float32),
                         [words[i] for i in episode], np.clip(view.read("progress").astype(np.float32), 0, 1),
                         success, episode)


def train_success_model(view: EpisodeView, camera: str = "front", *, steps: int = 1500, batch_size: int = 64,
                        lr: float = 1e-3, success_weight: float = 4.0, seed: int = 0,
                        progress_bar: bool = False, extra: SuccessLabels | None = None,
                        success_frames: int = 1, **config: Any) -> SuccessModel:
    """Train a :class:`SuccessModel` on every frame of ``view`` (and the labelled frames of
    ``extra``, e.g. imagined replays: :mod:`~robot_learn.world_models.replay_labels`).
    Success frames (the last ``success_frames`` of each successful episode) are drawn as a
    quarter of each batch and their loss weighs ``success_weight``; ``config`` sets other
    :class:`SuccessModelConfig` fields."""
    from tqdm import tqdm

    data = success_labels(view, camera, last=success_frames)
    if extra is not None:
        data = data.joined(extra)
    if not data.success.any():
        raise ValueError(f"store {view.store.path} has no successful episode to learn success from")
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    model = SuccessModel(SuccessModelConfig(
        camera=camera, image_size=int(data.frames.shape[1]), state_dim=int(data.states.shape[1]),
        vocab=build_vocab(set(data.instructions)), state_mean=data.states.mean(0).tolist(),
        state_std=(data.states.std(0) + 1e-3).tolist(), **config))
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=lr, total_steps=steps, pct_start=0.1)
    positives, negatives = np.flatnonzero(data.success), np.flatnonzero(~data.success)
    n_pos = max(1, batch_size // 4)
    model.train()
    for _ in tqdm(range(steps), desc="success model", disable=not progress_bar):
        idx = np.concatenate([rng.choice(positives, n_pos), rng.choice(negatives, batch_size - n_pos)])
        logits, progress = model(torch.as_tensor(data.frames[idx]), torch.as_tensor(data.states[idx]),
                                 [data.instructions[i] for i in idx])
        target = torch.as_tensor(data.success[idx], dtype=torch.float32)
        weight = 1.0 + (success_weight - 1.0) * target
        loss = (F.binary_cross_entropy_with_logits(logits, target, weight=weight)
                + F.mse_loss(progress, torch.as_tensor(data.progress[idx])))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        schedule.step()
    return model.eval()
