"""Configuration of the discrete-diffusion VLA policy (a plain, YAML-serialisable dataclass).

Hydra builds it through the presets at the bottom
(``_target_: robot_learn.policies.discrete_diffusion.discrete_diffusion_image_config``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from robot_learn.policies.frame_encoder import apply_frame_encoder_settings
from robot_learn.policies.config_checks import (
    check_at_least, check_choice, check_execution_fits_chunk, check_field_types, check_observes_something,
)

DECODINGS = ("maskgit", "adaptive", "parallel", "autoregressive")
CONFIDENCES = ("prob", "margin")
BACKBONES = ("tiny", "hf")
ATTENTIONS = ("prefix_cached", "full")


@dataclass
class DiscreteDiffusionConfig:
    """All settings of :class:`DiscreteDiffusionPolicy`.

    The action chunk is ``action_horizon`` (H) steps x ``action_dim`` dims, each
    dim binned into ``num_bins`` tokens; that is ``H * action_dim`` action tokens.
    The transformer sees, in order: image patch tokens per camera, instruction
    tokens, proprioception tokens (one per obs step and low-dim key), action tokens.
    """

    # Settings that change only how actions are decoded, not what is trained: a training
    # run may resume with them changed (Trainer's resume check).
    inference_fields: ClassVar[frozenset[str]] = frozenset({
        "execute_horizon", "decoding", "decoding_rounds", "confidence", "token_temperature", "choice_temperature",
        "remask_threshold", "remask_margin", "compile_inference"})

    # shapes
    action_dim: int = 5
    state_dims: dict[str, int] = field(default_factory=lambda: {"state": 10})
    # tokens per low-dim key (default 1); e.g. {"objects": 3}: one token per object slot
    state_tokens: dict[str, int] = field(default_factory=dict)
    # > 0: auxiliary loss (this weight) classifying each slot token of `grounding_key` as the object
    # to move / target / other / empty; training batches then need "env_state" (see grounding.py)
    grounding_weight: float = 0.0
    grounding_key: str = "objects"
    camera_names: list[str] = field(default_factory=list)
    image_size: int = 96
    # horizons; the chunk starts at the current step when obs_horizon == 1
    obs_horizon: int = 1
    action_horizon: int = 8
    execute_horizon: int = 8
    # action tokenizer: per-dim q01/q99 -> [-1, 1] -> num_bins uniform bins (+1 [MASK] id)
    num_bins: int = 256
    # training targets: 0 = one-hot bin (cross-entropy on the true bin); > 0 = a Gaussian of this
    # many bin widths spread over neighbouring bins (HL-Gauss), which generalises across bins
    label_sigma_bins: float = 0.0
    # image patch stem: conv layers (stride 2 each) then a patch conv (kernel = stride = patch_size)
    crop_size: int = 84
    stem_channels: list[int] = field(default_factory=lambda: [16, 32])
    patch_size: int = 3
    # instruction tokens: words of `vocab` (ids 0 pad, 1 unknown, then the vocabulary)
    use_language: bool = True
    vocab: list[str] = field(default_factory=list)
    text_max_len: int = 16
    # backbone: "tiny" (from scratch) or "hf" (transformers model from a local path or a config)
    backbone: str = "tiny"
    hidden_dim: int = 128
    num_layers: int = 4
    num_heads: int = 4
    mlp_ratio: float = 4.0
    dropout: float = 0.0
    # "prefix_cached": observation tokens do not attend to action tokens, so their keys and
    # values are computed once per chunk and reused by every decoding round;
    # "full": every token attends to every other one (each round re-runs the whole sequence).
    attention: str = "prefix_cached"
    hf_path: str = ""  # local directory (never downloaded); empty -> build from hf_config
    hf_config: dict[str, Any] = field(default_factory=dict)  # e.g. {"model_type": "bert", "hidden_size": 32, ...}
    lora_rank: int = 0  # > 0 wraps the hf backbone with peft LoRA adapters
    lora_alpha: float = 16.0
    lora_targets: list[str] = field(default_factory=lambda: ["query", "value"])
    # decoding
    decoding: str = "maskgit"
    decoding_rounds: int = 12  # K (maskgit / adaptive)
    confidence: str = "prob"  # score of a sampled token: its probability, or top1 - top2 gap
    token_temperature: float = 1.0  # softmax temperature for sampling tokens; 0 = argmax
    choice_temperature: float = 1.0  # Gumbel noise on the keep/re-mask choice, annealed to 0
    remask_threshold: float = 0.05  # committed token re-masked if its confidence falls below this
    remask_margin: float = 0.5  # ... or drops by more than this since it was committed
    # torch.compile each decoding round's network pass and the frozen frame encoder (CompiledCall):
    # the same tokens, faster at batch 1, but the first chunk compiles (tens of seconds on 2 cores)
    # and it needs a C++ compiler; eager after one warning if not. Prefix-cached tiny backbone only.
    compile_inference: bool = False
    # pixels through a pretrained, frozen frame encoder (FrameEncoderConfig / FramePretrainConfig
    # as dicts; empty: none). Its output is the low-dim key "features", added to state_dims.
    frame_encoder: dict[str, Any] = field(default_factory=dict)
    frame_pretraining: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_field_types(self)
        # Hydra passes ListConfig/DictConfig; keep plain containers so YAML dumps them.
        self.state_dims = {str(k): int(v) for k, v in dict(self.state_dims).items()}
        self.state_tokens = {str(k): int(v) for k, v in dict(self.state_tokens).items()}
        self.camera_names = [str(c) for c in self.camera_names]
        self.stem_channels = [int(v) for v in self.stem_channels]
        self.vocab = [str(w) for w in self.vocab]
        self.lora_targets = [str(t) for t in self.lora_targets]
        self.hf_config = _plain_dict(self.hf_config)
        apply_frame_encoder_settings(self)
        self.validate()

    @property
    def num_action_tokens(self) -> int:
        return self.action_horizon * self.action_dim

    def validate(self) -> None:
        """Raise ValueError naming the bad setting and the valid choices."""
        check_choice("decoding", self.decoding, DECODINGS)
        check_choice("confidence", self.confidence, CONFIDENCES)
        check_choice("backbone", self.backbone, BACKBONES)
        check_choice("attention", self.attention, ATTENTIONS)
        check_observes_something(self)
        check_at_least(self, ("action_dim", "obs_horizon", "action_horizon", "execute_horizon", "decoding_rounds",
                              "text_max_len", "hidden_dim", "num_layers", "num_heads", "patch_size"), 1)
        check_at_least(self, ("num_bins",), 2)
        check_execution_fits_chunk(self)
        if self.hidden_dim % self.num_heads:
            raise ValueError(f"hidden_dim ({self.hidden_dim}) must be divisible by num_heads ({self.num_heads})")
        if self.camera_names and not 0 < self.crop_size <= self.image_size:
            raise ValueError(f"crop_size must be in (0, image_size={self.image_size}], got {self.crop_size}")
        check_at_least(self, ("token_temperature", "choice_temperature", "remask_threshold", "remask_margin", "dropout",
                             "label_sigma_bins", "grounding_weight"), 0)
        if self.grounding_weight > 0 and self.state_tokens.get(self.grounding_key, 1) < 2:
            raise ValueError(f"grounding_weight > 0 needs grounding_key {self.grounding_key!r} split into slot tokens "
                             f"(state_tokens={{{self.grounding_key!r}: N}}); state_tokens is {self.state_tokens}")
        if self.backbone == "hf":
            if not self.hf_path and not self.hf_config:
                raise ValueError("backbone='hf' needs hf_path (a local transformers model directory) or hf_config")
            if self.attention != "full":
                raise ValueError("backbone='hf' supports only attention='full' (no prefix cache); set attention=full")

    def with_changes(self, **changes: Any) -> DiscreteDiffusionConfig:
        """A copy with some fields replaced (validated)."""
        return replace(self, **changes)


def _plain_dict(value: Any) -> dict[str, Any]:
    from collections.abc import Mapping, Sequence

    def plain(v: Any) -> Any:
        if isinstance(v, Mapping):
            return {str(k): plain(x) for k, x in v.items()}
        if isinstance(v, Sequence) and not isinstance(v, (str, bytes)):
            return [plain(x) for x in v]
        return v

    return plain(dict(value))


def discrete_diffusion_state_config(**overrides: Any) -> DiscreteDiffusionConfig:
    """Proprioception + instruction only (no cameras): the fastest CPU variant.

    Without images or object state it cannot see the scene; useful for tests and
    for timing the decoder, not for task success.
    """
    base = dict(state_dims={"state": 10}, camera_names=[])
    return DiscreteDiffusionConfig(**{**base, **overrides})


def discrete_diffusion_image_config(**overrides: Any) -> DiscreteDiffusionConfig:
    """CPU default: front + wrist cameras (96x96, cropped to 84 -> 7x7 patches each),
    instruction words, proprioception (``state``), a 4-layer 128-wide transformer,
    H = 8 chunk of 5-dim pose actions in 256 bins, MaskGIT decoding in 12 rounds."""
    base = dict(state_dims={"state": 10}, camera_names=["front", "wrist"], image_size=96, crop_size=84)
    return DiscreteDiffusionConfig(**{**base, **overrides})


def discrete_diffusion_pixels_config(**overrides: Any) -> DiscreteDiffusionConfig:
    """The VLA on pixels: ``state`` (10), the instruction words, and the features of a
    frozen frame encoder over the cameras (FiLM-conditioned on the instruction, so they
    describe the object it names). No privileged key at inference."""
    base = dict(state_dims={"state": 10}, camera_names=[],
                frame_encoder={"cameras": ["front", "wrist"], "signal": "privileged"})
    return DiscreteDiffusionConfig(**{**base, **overrides})
