"""Configuration of the continuous diffusion policy (a plain, YAML-serialisable dataclass).

Hydra builds it with ``_target_: robot_learn.policies.diffusion.DiffusionConfig``.
Two presets match the CLI's policy configs: :func:`diffusion_state_config` and
:func:`diffusion_image_config`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from robot_learn.policies.frame_encoder import apply_frame_encoder_settings
from robot_learn.policies.config_checks import (
    check_at_least, check_choice, check_execution_fits_chunk, check_field_types, check_observes_something,
)
from robot_learn.policies.vision_encoder import VISION_POOLS

DENOISERS = ("unet", "transformer")
HEADS = ("diffusion", "mip")
INFERENCE_SCHEDULERS = ("ddpm", "ddim", "dpmsolver")
PREDICTION_TYPES = ("epsilon", "sample")
TEXT_ENCODERS = ("none", "vocab", "pretrained")


@dataclass
class DiffusionConfig:
    """All settings of :class:`DiffusionPolicy`.

    Shapes: ``action_dim`` and ``state_dims`` (low-dim observation key -> size, in
    concatenation order), ``camera_names`` with square ``image_size`` images.
    Horizons: ``obs_horizon`` (To) observations in, ``action_horizon`` (Ta) actions
    out, of which ``execute_horizon`` run before replanning.
    """

    # Settings that change only how actions are sampled, not what is trained: a training
    # run may resume with them changed (Trainer's resume check).
    inference_fields: ClassVar[frozenset[str]] = frozenset({
        "execute_horizon", "inference_scheduler", "num_inference_steps", "fast_inference", "compile_inference",
        "compile_bf16", "clip_sample_range", "init_noise_scale"})

    # shapes
    action_dim: int = 5
    state_dims: dict[str, int] = field(default_factory=lambda: {"state": 10})
    camera_names: list[str] = field(default_factory=list)
    image_size: int = 96
    # horizons
    obs_horizon: int = 2
    action_horizon: int = 16
    execute_horizon: int = 8
    # observation encoders
    state_hidden_dims: list[int] = field(default_factory=lambda: [128])
    state_feature_dim: int = 64
    crop_size: int = 84
    vision_channels: list[int] = field(default_factory=lambda: [16, 32, 64, 128])
    vision_blocks_per_stage: int = 2
    num_keypoints: int = 32
    vision_feature_dim: int = 64
    share_vision_encoder: bool = False
    vision_pool: str = "spatial_softmax"  # or "flatten" (see VisionEncoder)
    vision_stem_stride: int = 2  # 4: a 4x4 patch stem, ResNet-18's downsampling before its first stage
    vision_film: bool = False  # FiLM the camera encoders with the instruction embedding (needs a text encoder)
    # language: "none", "vocab" (trained from scratch on `vocab`) or "pretrained" (frozen model at `pretrained_text_path`)
    text_encoder: str = "none"
    vocab: list[str] = field(default_factory=list)
    text_dim: int = 64
    text_max_len: int = 16
    text_layers: int = 1
    pretrained_text_path: str = ""
    # denoiser: "unet" or "transformer"
    denoiser: str = "unet"
    down_dims: list[int] = field(default_factory=lambda: [64, 128, 256])
    kernel_size: int = 5
    unet_groups: int = 8
    timestep_embed_dim: int = 128
    transformer_dim: int = 128
    transformer_layers: int = 4
    transformer_heads: int = 4
    transformer_cond_layers: int = 1
    transformer_dropout: float = 0.0
    transformer_causal: bool = True
    # head: "diffusion" (DDPM training, sampled by inference_scheduler) or "mip" (two network
    # passes, no noise; see mip_head.py), which ignores the diffusion settings below
    head: str = "diffusion"
    mip_t_star: float = 0.9
    # diffusion
    num_train_timesteps: int = 100
    beta_schedule: str = "squaredcos_cap_v2"
    prediction_type: str = "epsilon"
    clip_sample: bool = True
    # |normalised action| sampled chunks are clipped to: 1 is the training demos' range. Fine-tuning on
    # data that reaches beyond it widens it (DiffusionPolicy.widen_sample_range, loops/finetune.py).
    clip_sample_range: float = 1.0
    inference_scheduler: str = "ddim"
    num_inference_steps: int = 10
    # the sampler starts from this times Gaussian noise. 0: from zero noise, so ddim and dpmsolver (whose
    # steps add no noise) give one chunk per observation, whatever the generator. On the pixel preset's
    # bin_place policy 0 won 337 of 350 held-out episodes against 311 at 1 (docs/benchmarks.md). ITPS's
    # post_hoc (best of N) and biased_init draw their own noise; guided and stochastic steering start from this
    init_noise_scale: float = 1.0
    # the U-Net's convolutions as matrix products in eval mode (same actions, faster at small
    # batches on CPU; MatmulConv1d). Training is unaffected.
    fast_inference: bool = True
    # torch.compile the denoiser and the image encoders (weights frozen in) for inference
    # (CompiledCall): faster again, but the first chunk compiles (5-60 s on 2 cores, less with
    # inductor's on-disk cache warm), new weights compile the encoders again, and it needs a C++
    # compiler; eager after one warning if not.
    compile_inference: bool = False
    # with compile_inference: those calls in bf16, their weights frozen in as bf16 constants
    # (CompiledCall.set_bf16). Only where the CPU runs bf16 natively (AVX512-BF16 or AMX), else
    # fp32 after a warning. Actions differ from fp32's by bf16 rounding. Frozen: each weight
    # change compiles again (seconds), so for deployment and evaluation, not during training.
    compile_bf16: bool = False
    # pixels through a pretrained, frozen frame encoder (FrameEncoderConfig / FramePretrainConfig
    # as dicts; empty: none). Its output is the low-dim key "features", added to state_dims.
    frame_encoder: dict[str, Any] = field(default_factory=dict)
    frame_pretraining: dict[str, Any] = field(default_factory=dict)
    # conditioning inputs (key of state_dims -> the value it takes when deployed), e.g.
    # RECAP's {"advantage": 1.0}: trained from labels, never observed by a robot.
    conditions: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_field_types(self)
        if not self.clip_sample_range >= 1.0:
            raise ValueError(f"clip_sample_range must be >= 1 (the demos' normalised range), got {self.clip_sample_range}")
        # Hydra passes ListConfig/DictConfig; keep plain containers so YAML dumps them.
        self.state_dims = {str(k): int(v) for k, v in dict(self.state_dims).items()}
        self.camera_names = [str(c) for c in self.camera_names]
        self.state_hidden_dims = [int(v) for v in self.state_hidden_dims]
        self.vision_channels = [int(v) for v in self.vision_channels]
        self.vocab = [str(w) for w in self.vocab]
        self.down_dims = [int(v) for v in self.down_dims]
        self.conditions = {str(k): float(v) for k, v in dict(self.conditions).items()}
        apply_frame_encoder_settings(self)
        self.validate()

    def validate(self) -> None:
        """Raise ValueError naming the bad setting and the valid choices."""
        check_choice("denoiser", self.denoiser, DENOISERS)
        check_choice("head", self.head, HEADS)
        if self.inference_scheduler == "mip":
            raise ValueError("inference_scheduler 'mip': MIP is a head trained for its two passes, not a sampler; "
                             f"set head='mip' (policy.head=mip); samplers: {', '.join(INFERENCE_SCHEDULERS)}")
        check_choice("inference_scheduler", self.inference_scheduler, INFERENCE_SCHEDULERS)
        check_choice("prediction_type", self.prediction_type, PREDICTION_TYPES)
        check_choice("text_encoder", self.text_encoder, TEXT_ENCODERS)
        check_choice("vision_pool", self.vision_pool, VISION_POOLS)
        if self.vision_stem_stride not in (2, 4):
            raise ValueError(f"vision_stem_stride must be 2 or 4, got {self.vision_stem_stride!r}")
        check_observes_something(self)
        unknown = [k for k in self.conditions if k not in self.state_dims]
        if unknown:
            raise ValueError(f"conditions {unknown} are not low-dim inputs; state_dims: {', '.join(self.state_dims)}")
        check_at_least(self, ("action_dim", "obs_horizon", "action_horizon", "execute_horizon", "num_train_timesteps",
                              "num_inference_steps"), 1)
        check_execution_fits_chunk(self)
        if not 0.0 < self.mip_t_star < 1.0:
            raise ValueError(f"mip_t_star must be strictly between 0 and 1, got {self.mip_t_star}")
        if not (math.isfinite(self.init_noise_scale) and self.init_noise_scale >= 0.0):
            raise ValueError(f"init_noise_scale must be a finite number >= 0 (1: plain sampling, 0: from zero "
                             f"noise), got {self.init_noise_scale}")
        if self.num_inference_steps > self.num_train_timesteps:
            raise ValueError(f"num_inference_steps ({self.num_inference_steps}) exceeds num_train_timesteps ({self.num_train_timesteps})")
        if self.denoiser == "unet":
            factor = 2 ** (len(self.down_dims) - 1)
            if not self.down_dims or self.action_horizon % factor:
                raise ValueError(
                    f"action_horizon ({self.action_horizon}) must be divisible by 2 ** (len(down_dims) - 1) = {factor} "
                    f"for down_dims {self.down_dims}"
                )
        if self.vision_film and (self.text_encoder == "none" or not self.camera_names):
            raise ValueError("vision_film conditions the cameras on the instruction: it needs camera_names and a "
                             f"text_encoder other than 'none' (got cameras {self.camera_names}, text_encoder "
                             f"'{self.text_encoder}')")
        if self.text_encoder == "pretrained" and not self.pretrained_text_path:
            raise ValueError("text_encoder='pretrained' needs pretrained_text_path (a local transformers model directory)")

    def with_changes(self, **changes: Any) -> DiffusionConfig:
        """A copy with some fields replaced (validated)."""
        return replace(self, **changes)


def diffusion_state_config(**overrides: Any) -> DiffusionConfig:
    """State-only U-Net policy: observes ``state`` (10) and privileged ``env_state`` (14)."""
    base = dict(state_dims={"state": 10, "env_state": 14}, camera_names=[], text_encoder="none", denoiser="unet")
    return DiffusionConfig(**{**base, **overrides})


def diffusion_image_config(**overrides: Any) -> DiffusionConfig:
    """Image + language U-Net policy: ``state`` (10), cameras ``front`` and ``wrist`` (96x96,
    cropped to 84; a 3-stage, one-block-per-stage ResNet each), one observation step,
    and the instruction through a vocabulary text encoder.

    The vocabulary is filled from the dataset's instructions when the policy is built
    (``make_policy(..., instructions=...)``) unless given here as ``vocab``.
    """
    base = dict(
        state_dims={"state": 10},
        camera_names=["front", "wrist"],
        image_size=96,
        crop_size=84,
        obs_horizon=1,
        vision_channels=[16, 32, 64],
        vision_blocks_per_stage=1,
        text_encoder="vocab",
        denoiser="unet",
    )
    return DiffusionConfig(**{**base, **overrides})


def diffusion_pixels_config(**overrides: Any) -> DiffusionConfig:
    """Deployable pixel policy: ``state`` (10) and the features of a frozen frame encoder
    over the cameras and the instruction (``frame_encoder``, pretrained as
    ``frame_pretraining`` says). It never reads privileged keys at inference."""
    base = dict(state_dims={"state": 10}, camera_names=[], text_encoder="none", denoiser="unet",
                frame_encoder={"cameras": ["front", "wrist"], "signal": "privileged"})
    return DiffusionConfig(**{**base, **overrides})
