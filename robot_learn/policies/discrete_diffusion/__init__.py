"""Discrete-diffusion VLA policy: action tokenizer, masking schedule, decoders, backbones, model."""

from robot_learn.policies.discrete_diffusion.action_tokenizer import ActionTokenizer
from robot_learn.policies.discrete_diffusion.backbone import HFBackbone, TinyTransformer
from robot_learn.policies.discrete_diffusion.configuration_discrete_diffusion import (
    DECODINGS,
    DiscreteDiffusionConfig,
    discrete_diffusion_image_config,
    discrete_diffusion_pixels_config,
    discrete_diffusion_state_config,
)
from robot_learn.policies.discrete_diffusion.decoding import DecodeResult, DecodeSettings, decode_tokens
from robot_learn.policies.discrete_diffusion.mask_schedule import mask_ratio, masked_count_after_round, sample_training_mask
from robot_learn.policies.discrete_diffusion.modeling_discrete_diffusion import DiscreteDiffusionPolicy
from robot_learn.policies.discrete_diffusion.ensemble import (
    DiscreteDiffusionEnsemble,
    DiscreteDiffusionEnsembleConfig,
    discrete_diffusion_pixels_ensemble_config,
)

__all__ = [
    "DECODINGS",
    "ActionTokenizer",
    "DecodeResult",
    "DecodeSettings",
    "DiscreteDiffusionConfig",
    "DiscreteDiffusionEnsemble",
    "DiscreteDiffusionEnsembleConfig",
    "DiscreteDiffusionPolicy",
    "HFBackbone",
    "TinyTransformer",
    "decode_tokens",
    "discrete_diffusion_image_config",
    "discrete_diffusion_pixels_config",
    "discrete_diffusion_pixels_ensemble_config",
    "discrete_diffusion_state_config",
    "mask_ratio",
    "masked_count_after_round",
    "sample_training_mask",
]
