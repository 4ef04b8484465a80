"""The ``Policy`` protocol: an abstract ``nn.Module`` every learner implements.

Subclasses implement ``compute_loss`` and ``predict_action_chunk``; this base class
supplies the receding-horizon ``select_action`` (an observation history of
``obs_horizon`` steps and a queue of ``execute_horizon`` actions), ``reset``,
``save``, and ``obs_shapes`` read from the config's ``state_dims``, ``camera_names``
and ``image_size``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

import torch
from torch import nn

from robot_learn.policies.batch import to_torch
from robot_learn.policies.frame_encoder import FEATURES_KEY, FrameEncoder, FrameEncoderConfig, frozen_features
from robot_learn.policies.text_encoder import batch_instructions

Obs = dict[str, Any]


class Policy(nn.Module, ABC):
    """Abstract policy over tensors.

    Observation dicts follow the env layout with a batch dim and, for chunk
    prediction, a time dim: ``{"state": [B, To, D], "env_state": [B, To, E],
    "images": {cam: uint8 [B, To, H, W, 3]}, "instruction": list[str]}``.
    ``select_action`` takes the same dict without the time dim.

    Subclasses set ``name`` (the registry key and ``type`` in config.yaml) and
    ``config_class`` (a plain dataclass), and take ``(config, stats=None)``.
    """

    name: ClassVar[str] = ""
    config_class: ClassVar[type]

    def __init__(self, config: Any) -> None:
        super().__init__()
        self.config = config
        # A frozen, pretrained frame encoder (config ``frame_encoder``, a FrameEncoderConfig
        # as a dict) turns cameras + instruction into the low-dim key ``features``; its
        # weights are saved with the policy, so a checkpoint deploys on its own.
        encoder_settings = dict(getattr(config, "frame_encoder", None) or {})
        self.frame_encoder = (FrameEncoder(FrameEncoderConfig(**encoder_settings)).requires_grad_(False).eval()
                              if encoder_settings else None)
        self._history: dict[tuple[str, ...], deque[torch.Tensor]] = {}
        self._instruction: list[str] | None = None
        self._action_queue: deque[torch.Tensor] = deque()

    # --- what subclasses provide -------------------------------------------------
    @abstractmethod
    def compute_loss(self, batch: Mapping[str, Any]) -> dict[str, torch.Tensor]:
        """Training loss for a tensor batch (``to_torch`` of a sampler batch); has ``"loss"``."""

    @abstractmethod
    def predict_action_chunk(self, obs: Obs, generator: torch.Generator | None = None) -> torch.Tensor:
        """Unnormalised actions ``[B, action_horizon, A]`` for an observation history.

        Chunk index 0 is the action at the oldest observation step (the sampler's
        window layout), so the action for the newest step is index ``obs_horizon - 1``.
        """

    @property
    def obs_shapes(self) -> dict[str, tuple[int, ...]]:
        """Per-step observation shapes this policy consumes, e.g. ``{"state": (10,), "images/front": (96, 96, 3)}``.

        The default reads the config's ``state_dims`` (key -> size), ``camera_names`` and
        square ``image_size``; a policy whose config says otherwise overrides this.
        """
        encoder = self.frame_encoder
        shapes: dict[str, tuple[int, ...]] = {key: (dim,) for key, dim in self.config.state_dims.items()
                                              if (encoder is None or key != FEATURES_KEY)
                                              and key not in self.conditions}
        for camera in self.config.camera_names:
            shapes[f"images/{camera}"] = (self.config.image_size, self.config.image_size, 3)
        if encoder is not None:  # the encoder's features come from its cameras
            size = encoder.config.image_size
            shapes.update({f"images/{c}": (size, size, 3) for c in encoder.config.cameras})
        return shapes

    @property
    def conditions(self) -> dict[str, float]:
        """Conditioning inputs the policy declares (config ``conditions``: key -> deployed
        value, e.g. RECAP's ``{"advantage": 1.0}``). No robot observes them: training
        batches carry labels, and :meth:`select_action` fills in the deployed value."""
        return dict(getattr(self.config, "conditions", None) or {})

    @property
    def training_obs_keys(self) -> tuple[str, ...]:
        """Keys a training sampler must provide: the low-dim keys (with a frame encoder,
        its cached ``features`` instead of its cameras), the cameras the policy encodes
        itself, and any key the loss alone reads (e.g. privileged labels). Inference
        needs only ``obs_shapes``. Conditioning inputs are not among them: a
        conditioning sampler adds their labels."""
        if self.encoder_trainable:  # end-to-end fine-tuning: the encoder's cameras, not its cache
            return (*(k for k in self.config.state_dims if k not in self.conditions and k != FEATURES_KEY),
                    *(f"images/{c}" for c in (*self.config.camera_names, *self.frame_encoder.config.cameras)))
        return (*(k for k in self.config.state_dims if k not in self.conditions),
                *(f"images/{c}" for c in self.config.camera_names))

    @property
    def encoder_trainable(self) -> bool:
        """Whether the frame encoder is being fine-tuned (its parameters take gradients):
        it then encodes the raw frames of every batch, with autograd, instead of the cache."""
        return self.frame_encoder is not None and any(p.requires_grad for p in self.frame_encoder.parameters())

    def with_frame_features(self, obs: Obs) -> Obs:
        """``obs`` plus ``features`` ``[B, To, D]`` from the frame encoder, unless the policy has
        none or the batch already carries them (cached features) and the encoder is frozen."""
        trainable = self.encoder_trainable
        if self.frame_encoder is None or (FEATURES_KEY in obs and not trainable):
            return obs
        images = obs.get("images")
        cameras = self.frame_encoder.config.cameras
        if not isinstance(images, Mapping) or any(c not in images for c in cameras):
            have = sorted(images) if isinstance(images, Mapping) else []
            raise ValueError(f"this policy sees through cameras {cameras}; the observation has {have}")
        first = images[cameras[0]]
        batch, steps = int(first.shape[0]), int(first.shape[1])
        flat = {c: images[c].reshape(batch * steps, *images[c].shape[2:]) for c in cameras}
        instructions = None
        if self.frame_encoder.text is not None:
            instructions = [text for text in batch_instructions(obs, batch) for _ in range(steps)]
        features = (self.frame_encoder.encode(flat, instructions) if trainable
                    else frozen_features(self.frame_encoder, flat, instructions,
                                         compiled=bool(getattr(self.config, "compile_inference", False))))
        return {**obs, FEATURES_KEY: features.reshape(batch, steps, -1)}

    # --- shared behaviour ---------------------------------------------------------
    @property
    def obs_horizon(self) -> int:
        return int(self.config.obs_horizon)

    @property
    def action_horizon(self) -> int:
        return int(self.config.action_horizon)

    @property
    def execute_horizon(self) -> int:
        return int(self.config.execute_horizon)

    @property
    def action_dim(self) -> int:
        return int(self.config.action_dim)

    @property
    def device(self) -> torch.device:
        for tensor in self.parameters():
            return tensor.device
        for tensor in self.buffers():
            return tensor.device
        return torch.device("cpu")

    def reset(self) -> None:
        """Forget the observation history and the queued actions (call at episode start)."""
        self._history.clear()
        self._instruction = None
        self._action_queue.clear()

    @torch.no_grad()
    def select_action(self, obs: Obs, generator: torch.Generator | None = None,
                      predict: Callable[..., torch.Tensor] | None = None) -> torch.Tensor:
        """One action ``[B, A]`` for the current observation (no time dim).

        Keeps the last ``obs_horizon`` observations (padding with copies of the first
        after ``reset``) and, when the action queue is empty, refills it with
        ``execute_horizon`` actions of a freshly predicted chunk, starting at the
        current step. Numpy inputs are converted with ``to_torch``. ``predict``
        (called as ``predict_action_chunk`` is, e.g. a steered sampler) replaces
        ``predict_action_chunk`` for the chunk.
        """
        self._push_observation(to_torch(self._with_conditions(obs), self.device))
        if not self._action_queue:
            predict = predict or self.predict_action_chunk
            chunk = predict(self._stacked_history(), generator=generator)
            start = self.obs_horizon - 1
            for k in range(start, start + self.execute_horizon):
                self._action_queue.append(chunk[:, k])
        return self._action_queue.popleft()

    def drop_queued_actions(self) -> None:
        """Forget the queued actions but keep the observation history: the next
        :meth:`select_action` plans a fresh chunk (e.g. when the operator steers anew)."""
        self._action_queue.clear()

    def save(self, directory: str | Path) -> None:
        """Write ``config.yaml`` and ``model.safetensors`` to ``directory``."""
        from robot_learn.policies.checkpoint import save_policy

        save_policy(self, directory)

    # --- helpers for compute_loss ------------------------------------------------
    def _batch_actions(self, batch: Mapping[str, Any]) -> torch.Tensor:
        """``batch["action"]``, refused unless it is ``[B, action_horizon, action_dim]``."""
        actions = batch["action"]
        if actions.ndim != 3 or actions.shape[1:] != (self.action_horizon, self.action_dim):
            raise ValueError(
                f"batch['action'] must be [B, {self.action_horizon}, {self.action_dim}], got {tuple(actions.shape)}"
            )
        return actions

    @staticmethod
    def _obs_from_batch(batch: Mapping[str, Any]) -> Obs:
        """The observation dict of a training batch, with the batch's instructions folded in."""
        obs = dict(batch["obs"])
        if "instruction" in batch and "instruction" not in obs:
            obs["instruction"] = batch["instruction"]
        return obs

    # --- helpers for select_action -----------------------------------------------
    def _with_conditions(self, obs: Obs) -> Obs:
        """``obs`` plus each declared condition at its deployed value (unless given)."""
        missing = {k: v for k, v in self.conditions.items() if k not in obs}
        if not missing:
            return obs
        leaf = next(next(iter(v.values())) if isinstance(v, Mapping) else v
                    for k, v in obs.items() if k != "instruction")
        return {**obs, **{k: torch.full((len(leaf), 1), v) for k, v in missing.items()}}

    def _push_observation(self, obs: Obs) -> None:
        instruction = obs.get("instruction")
        needed = set(self.obs_shapes) | set(self.conditions)
        # Keep only what the policy reads (an env may also return cameras a state policy ignores).
        leaves = {key: value for key, value in _flatten_tensors(obs) if "/".join(key) in needed}
        missing = sorted(needed - {"/".join(key) for key in leaves})
        if missing:
            raise ValueError(f"select_action observation lacks {missing}; the policy reads {sorted(needed)}")
        batch_sizes = {leaf.shape[0] for leaf in leaves.values()}
        if len(batch_sizes) != 1:
            raise ValueError(f"observation tensors disagree on batch size: {sorted(batch_sizes)}")
        batch = batch_sizes.pop()
        if self._history:
            known = next(iter(self._history.values()))[0].shape[0]
            if known != batch or set(self._history) != set(leaves):
                raise ValueError(
                    f"observation batch/keys changed since the last step (batch {known} -> {batch}); call reset() between episodes"
                )
        for key, value in leaves.items():
            # Own the memory: to_torch shares it with numpy arrays an env may reuse in place.
            value = value.clone()
            if key not in self._history:
                # Episode start: pad the history with copies of the first observation.
                self._history[key] = deque([value] * self.obs_horizon, maxlen=self.obs_horizon)
            else:
                self._history[key].append(value)
        if instruction is not None:
            self._instruction = [instruction] * batch if isinstance(instruction, str) else list(instruction)

    def _stacked_history(self) -> Obs:
        stacked: Obs = {}
        for key, frames in self._history.items():
            node = stacked
            for part in key[:-1]:
                node = node.setdefault(part, {})
            node[key[-1]] = torch.stack(list(frames), dim=1)
        if self._instruction is not None:
            stacked["instruction"] = self._instruction
        return stacked


def _flatten_tensors(tree: Mapping[str, Any], prefix: tuple[str, ...] = ()):
    for key, value in tree.items():
        if isinstance(value, torch.Tensor):
            yield prefix + (key,), value
        elif isinstance(value, Mapping):
            yield from _flatten_tensors(value, prefix + (key,))
