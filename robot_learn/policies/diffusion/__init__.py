"""Continuous diffusion policy: configuration, model and denoisers."""

from robot_learn.policies.diffusion.configuration_diffusion import (
    DiffusionConfig,
    diffusion_image_config,
    diffusion_pixels_config,
    diffusion_state_config,
)
from robot_learn.policies.diffusion.modeling_diffusion import DiffusionPolicy, make_inference_scheduler
from robot_learn.policies.diffusion.transformer_denoiser import TransformerDenoiser
from robot_learn.policies.diffusion.unet1d import ConditionalUnet1D

__all__ = [
    "ConditionalUnet1D",
    "DiffusionConfig",
    "DiffusionPolicy",
    "TransformerDenoiser",
    "diffusion_image_config",
    "diffusion_pixels_config",
    "diffusion_state_config",
    "make_inference_scheduler",
]
