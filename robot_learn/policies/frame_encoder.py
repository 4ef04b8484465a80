"""`FrameEncoder`: the shared frame representation (camera frames + instruction -> features).

One small ResNet per camera (``VisionEncoder``, spatial-softmax keypoints, FiLM on the
instruction's words) feeds an MLP that fuses the cameras into ``feature_dim``
features per frame. It is trained once, before any policy, on many rendered scenes
(``robot_learn.training.frame_pretraining``), then frozen: policies of either family
read its features as one more low-dimensional observation key (``FEATURES_KEY``), and
training reads them from the store's feature cache instead of decoding images.

Training signal (``signal``):
- ``privileged``: a linear head regresses the scene labels (object poses in role
  order, grasp centre, gripper; sim only). Role order makes the encoder find the
  object the instruction names.
- ``autoencoder``: label-free; a decoder reconstructs every camera's frame at
  ``recon_size`` pixels from the features (the path that also works on real-robot
  data, where no labels exist).

``identity`` hashes the config and the weights: a feature cache records it, and a
cache written by any other encoder is rebuilt, never used.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from robot_learn.policies.compiled_call import CompiledCall
from robot_learn.policies.config_checks import check_choice
from robot_learn.policies.text_encoder import VocabTextEncoder
from robot_learn.policies.vision_encoder import VisionEncoder

FEATURES_KEY = "features"
MIN_PRETRAIN_STEPS = 3
SIGNALS = ("privileged", "autoencoder")
OUTPUTS = ("labels", "latent", "poses")
POSE_LABELS = ("move_x", "move_y", "move_z", "move_cos4yaw", "move_sin4yaw",
               "target_x", "target_y", "target_z", "target_cos4yaw", "target_sin4yaw")


@dataclass
class FrameEncoderConfig:
    """Settings of :class:`FrameEncoder` (YAML-serialisable)."""

    cameras: list[str] = field(default_factory=lambda: ["front", "wrist"])
    image_size: int = 96
    channels: list[int] = field(default_factory=lambda: [32, 64])
    blocks_per_stage: int = 1
    stem_stride: int = 4
    num_keypoints: int = 32
    camera_dim: int = 64
    feature_dim: int = 64
    vocab: list[str] = field(default_factory=list)  # empty: the encoder ignores the instruction
    text_dim: int = 32
    signal: str = "privileged"
    label_names: list[str] = field(default_factory=list)
    recon_size: int = 32
    # What policies read: "latent" (the fused features; the only output of the label-free
    # signal), "labels" (the privileged head's predictions in real units, a small state
    # estimate), or "poses" (the predicted object poses, POSE_LABELS; the policy then trains
    # on the true poses of the demo frames, sim only, and deploys on the predictions).
    # On bin_place, latent reached 68% and labels 36% (docs/benchmarks.md).
    output: str = "latent"

    def __post_init__(self) -> None:
        self.cameras = [str(c) for c in self.cameras]
        self.channels = [int(c) for c in self.channels]
        self.vocab = [str(w) for w in self.vocab]
        self.label_names = [str(n) for n in self.label_names]
        check_choice("signal", self.signal, SIGNALS)
        check_choice("output", self.output, OUTPUTS)
        if self.signal == "autoencoder":
            self.output = "latent"
        if not self.cameras:
            raise ValueError("a frame encoder needs at least one camera (cameras: [front, ...])")


@dataclass
class FramePretrainConfig:
    """How a policy's frame encoder is pretrained: which scenes are rendered
    (``robot_learn.envs.scene_frames``) and how long it trains. Kept in the policy
    config (``frame_pretraining``) so a checkpoint says how its encoder was made."""

    tasks: list[str] = field(default_factory=list)  # empty: the task the policy trains on
    resets: int = 4000
    expert_episodes: int = 40  # per task
    every: int = 3
    noise: float = 1.0
    # Fraction of reset frames with the arm around the object to move. 0.5 did not help on
    # bin_place (42% and 36% against 68% without; docs/benchmarks.md), so it is off.
    near_object: float = 0.0
    # Fractions of reset frames with the object to move held in the gripper, and with it
    # already where the task puts it (envs/scene_frames.py).
    held: float = 0.0
    placed: float = 0.0
    steps: int = 2000
    batch_size: int = 64
    lr: float = 2e-3
    weight_decay: float = 1e-4
    val_fraction: float = 0.1
    seed: int = 0
    # Pretraining and the end-to-end fine-tuning under bf16 autocast on a CPU that runs bf16
    # natively (AVX512-BF16 or AMX; fp32 with a warning elsewhere, fp32 on CUDA). Weights stay fp32.
    # The frame encoder's convolutions and GroupNorms then run on contiguous (NCHW) activations.
    cpu_bf16: bool = False
    # End-to-end fine-tuning, after the policy has trained on the cached features: this many
    # more steps on raw frames with the encoder unfrozen, everything at finetune_lr
    # (robot_learn.training.encoder_finetune). 0 keeps the encoder frozen.
    finetune_steps: int = 0
    finetune_lr: float = 1e-4
    # Windows per fine-tuning step and rank (0: the training batch, train.batch_size). Each step encodes
    # every camera of every observation step of every window, so the batch sets its cost.
    finetune_batch_size: int = 0

    def __post_init__(self) -> None:
        self.tasks = [str(t) for t in self.tasks]
        if self.finetune_steps < 0 or not self.finetune_lr > 0 or self.finetune_batch_size < 0:
            raise ValueError(f"frame_pretraining.finetune_steps must be >= 0 (0: frozen encoder), finetune_lr > 0 "
                             f"and finetune_batch_size >= 0 (0: train.batch_size), got finetune_steps="
                             f"{self.finetune_steps}, finetune_lr={self.finetune_lr}, "
                             f"finetune_batch_size={self.finetune_batch_size}")
        if self.steps < MIN_PRETRAIN_STEPS or self.batch_size < 1:
            raise ValueError(f"frame_pretraining.steps must be >= {MIN_PRETRAIN_STEPS} (the learning-rate warm-up "
                             f"needs 2 steps) and batch_size >= 1, got steps={self.steps}, "
                             f"batch_size={self.batch_size}")


def apply_frame_encoder_settings(config: Any) -> None:
    """For a policy config's ``__post_init__``: validate ``frame_encoder`` and
    ``frame_pretraining`` (plain dicts; unknown keys are named) and add the encoder's
    ``features`` to ``state_dims``."""
    config.frame_encoder = _plain_settings("frame_encoder", config.frame_encoder, FrameEncoderConfig)
    config.frame_pretraining = _plain_settings("frame_pretraining", config.frame_pretraining, FramePretrainConfig)
    if config.frame_encoder:
        config.state_dims[FEATURES_KEY] = output_dim(FrameEncoderConfig(**config.frame_encoder))


def output_dim(config: FrameEncoderConfig) -> int:
    """Size of an encoder's output to policies (label count before labels are known: 0)."""
    if config.output == "poses":
        return len(POSE_LABELS)
    return len(config.label_names) if config.output == "labels" else int(config.feature_dim)


def _plain_settings(name: str, value: Any, schema: type) -> dict[str, Any]:
    settings = {str(k): (list(v) if isinstance(v, (list, tuple)) or type(v).__name__ == "ListConfig" else v)
                for k, v in dict(value or {}).items()}
    fields = schema.__dataclass_fields__
    unknown = sorted(set(settings) - set(fields))
    if unknown:
        raise ValueError(f"unknown {name} setting(s) {unknown}; valid: {', '.join(fields)}")
    settings = {k: [str(x) if isinstance(x, str) else x for x in v] if isinstance(v, list) else v
                for k, v in settings.items()}
    schema(**settings)  # type and choice checks
    return settings


class FrameEncoder(nn.Module):
    """``images`` (camera -> uint8 ``[N, H, W, 3]``) + ``instructions`` -> ``[N, feature_dim]``."""

    def __init__(self, config: FrameEncoderConfig) -> None:
        super().__init__()
        self.config = config
        self.text = VocabTextEncoder(config.vocab, dim=config.text_dim) if config.vocab else None
        cond = config.text_dim if self.text is not None else 0
        self.cameras = nn.ModuleDict({
            c: VisionEncoder(config.image_size, config.image_size, config.channels, config.blocks_per_stage,
                             config.num_keypoints, config.camera_dim, cond, stem_stride=config.stem_stride)
            for c in config.cameras})
        fused = config.camera_dim * len(config.cameras)
        self.fuse = nn.Sequential(nn.Linear(fused, 256), nn.Mish(), nn.Linear(256, config.feature_dim),
                                  nn.LayerNorm(config.feature_dim))
        if config.signal == "privileged" and not config.label_names:
            raise ValueError("signal 'privileged' needs label_names (the scene labels it regresses)")
        n_labels = len(config.label_names)
        self.label_head = nn.Linear(config.feature_dim, n_labels) if config.signal == "privileged" else None
        # Standardisation of the labels, set from the pretraining frames.
        self.register_buffer("label_mean", torch.zeros(n_labels))
        self.register_buffer("label_std", torch.ones(n_labels))
        self.decoder = _FrameDecoder(config) if config.signal == "autoencoder" else None
        self.compiled_readout = CompiledCall(self._readout, "the frame encoder")  # encode(..., compiled=True)

    @property
    def out_dim(self) -> int:
        """Size of what policies read (``encode``)."""
        return output_dim(self.config)

    def encode(self, images: Mapping[str, torch.Tensor], instructions: Sequence[str] | None = None,
               compiled: bool = False) -> torch.Tensor:
        """What policies read: predicted labels or the latent, as ``config.output`` says.
        ``compiled``: the image trunks and heads through ``torch.compile`` (``CompiledCall``)."""
        cond = self._condition(images, instructions)
        return (self.compiled_readout if compiled else self._readout)(images, cond)

    def forward(self, images: Mapping[str, torch.Tensor], instructions: Sequence[str] | None = None) -> torch.Tensor:
        return self._latent(images, self._condition(images, instructions))

    def _condition(self, images: Mapping[str, torch.Tensor], instructions: Sequence[str] | None) -> torch.Tensor | None:
        """Checks the cameras and their frame size; the instruction's embedding (None without text)."""
        missing = [c for c in self.config.cameras if c not in images]
        if missing:
            raise ValueError(f"the frame encoder reads cameras {self.config.cameras}; the observation lacks "
                             f"{missing} (it has {sorted(images)})")
        size = self.config.image_size
        for camera in self.config.cameras:
            shape = tuple(images[camera].shape[-3:])
            if shape != (size, size, 3):
                raise ValueError(f"camera {camera!r} frames are {shape}; the frame encoder was trained on "
                                 f"({size}, {size}, 3)")
        if self.text is None:
            return None
        if instructions is None:
            raise ValueError("this frame encoder is conditioned on the instruction; pass the instructions")
        return self.text(list(instructions))

    def _latent(self, images: Mapping[str, torch.Tensor], cond: torch.Tensor | None) -> torch.Tensor:
        parts = [self.cameras[c](images[c], cond) for c in self.config.cameras]
        return self.fuse(torch.cat(parts, dim=-1))

    def _readout(self, images: Mapping[str, torch.Tensor], cond: torch.Tensor | None) -> torch.Tensor:
        latent = self._latent(images, cond)
        if self.config.output == "latent":
            return latent
        labels = self.predict_labels(latent)
        if self.config.output == "poses":
            return labels[:, [self.config.label_names.index(n) for n in POSE_LABELS]]
        return labels

    def encoding_parameter_names(self) -> set[str]:
        """Names of the parameters ``encode`` reads: all but the pretraining-only heads (the
        decoder, and the label head when policies read the latent). Fine-tuning trains these."""
        heads = ("decoder.",) + (("label_head.",) if self.config.output == "latent" else ())
        return {name for name, _ in self.named_parameters() if not name.startswith(heads)}

    def predict_labels(self, features: torch.Tensor) -> torch.Tensor:
        """Scene labels (in ``label_names`` order, real units) predicted from features."""
        if self.label_head is None:
            raise ValueError("this frame encoder was trained without labels (signal 'autoencoder')")
        return self.label_head(features) * self.label_std + self.label_mean

    def loss(self, images: Mapping[str, torch.Tensor], instructions: Sequence[str] | None,
             labels: torch.Tensor | None = None) -> torch.Tensor:
        """The pretraining loss of ``config.signal`` on one batch."""
        features = self(images, instructions)
        if self.label_head is not None:
            if labels is None:
                raise ValueError("signal 'privileged' needs the batch's scene labels")
            target = (labels - self.label_mean) / self.label_std
            return F.smooth_l1_loss(self.label_head(features), target, beta=0.1)
        recon = self.decoder(features)
        target = torch.cat([_downsample(images[c], self.config.recon_size) for c in self.config.cameras], dim=1)
        return F.mse_loss(recon, target)

    # --- identity and checkpoints ----------------------------------------------
    def identity(self) -> str:
        """12 hex digits hashing the config and every weight: equal only for the same encoder."""
        digest = hashlib.sha256(json.dumps(asdict(self.config), sort_keys=True).encode())
        for name, tensor in sorted(self.state_dict().items()):
            digest.update(name.encode())
            digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
        return digest.hexdigest()[:12]

    def save(self, directory: str | Path) -> None:
        """``config.yaml`` + ``model.safetensors`` (no pickle), like policies."""
        import yaml
        from safetensors.torch import save_file

        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "config.yaml").write_text(yaml.safe_dump(
            {"type": "frame_encoder", "identity": self.identity(), "config": asdict(self.config)}, sort_keys=False))
        save_file({k: v.detach().cpu().contiguous() for k, v in self.state_dict().items()},
                  str(directory / "model.safetensors"))

    @classmethod
    def load(cls, directory: str | Path) -> "FrameEncoder":
        """Load a saved encoder; ValueError naming the file when it is not one."""
        import yaml
        from safetensors.torch import load_file

        directory = Path(directory)
        path = directory / "config.yaml"
        try:
            document = yaml.safe_load(path.read_text())
            if not isinstance(document, dict) or document.get("type") != "frame_encoder":
                raise ValueError("not a frame encoder config (type is not 'frame_encoder')")
            encoder = cls(FrameEncoderConfig(**document["config"]))
            encoder.load_state_dict(load_file(str(directory / "model.safetensors")))
        except (OSError, ValueError, TypeError, KeyError, RuntimeError, yaml.YAMLError) as exc:
            raise ValueError(f"cannot load a frame encoder from {str(directory)!r}: {exc}") from None
        return encoder.eval()


def frozen_features(encoder: FrameEncoder, images: Mapping[str, torch.Tensor],
                    instructions: Sequence[str] | None, compiled: bool = False) -> torch.Tensor:
    """Features of a frozen encoder (eval mode, no autograd), for policies and caches;
    ``compiled``: through ``torch.compile`` (a policy's ``compile_inference``)."""
    was_training = encoder.training
    encoder.eval()
    with torch.no_grad():
        out = encoder.encode(images, instructions, compiled=compiled)
    encoder.train(was_training)
    return out


def _downsample(frames: torch.Tensor, size: int) -> torch.Tensor:
    """uint8 ``[N, H, W, 3]`` -> float ``[N, 3, size, size]`` in [0, 1]."""
    x = frames.permute(0, 3, 1, 2).float() / 255.0
    return F.interpolate(x, size=(size, size), mode="area")


class _FrameDecoder(nn.Module):
    """Features -> every camera's frame at ``recon_size`` (the label-free signal)."""

    def __init__(self, config: FrameEncoderConfig) -> None:
        super().__init__()
        self.start = config.recon_size // 8
        self.project = nn.Linear(config.feature_dim, 64 * self.start * self.start)
        layers: list[nn.Module] = []
        for width_in, width_out in ((64, 64), (64, 32), (32, 32)):
            layers += [nn.Upsample(scale_factor=2, mode="nearest"), nn.Conv2d(width_in, width_out, 3, padding=1), nn.Mish()]
        layers.append(nn.Conv2d(32, 3 * len(config.cameras), 3, padding=1))
        self.net = nn.Sequential(*layers)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        x = self.project(features).reshape(-1, 64, self.start, self.start)
        return torch.sigmoid(self.net(x))
