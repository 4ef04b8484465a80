"""MIP, a two-pass policy head (Minimal Iterative Policy, arXiv 2512.01809).

One network f(t, x, o), the diffusion policy's denoiser, at two fixed times:

- pass 1, t = 0: from x = 0 it predicts the chunk, â = f(0, 0, o);
- pass 2, t = t* (0.9): it refines a chunk near the answer, a = f(t*, â, o).

Training asks both passes for the clean chunk a. Pass 2 sees a with a little noise,
x = a + (1 - t*) eps, so at inference it can correct pass 1's error:

    loss = |f(0, 0, o) - a|^2 / t*  +  |f(t*, a + (1 - t*) eps, o) - a|^2 / (1 - t*)

Inference runs no sampler and draws no noise: two network evaluations instead of a
DDIM schedule's ten.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from robot_learn.policies.config_checks import check_choice
from robot_learn.policies.diffusion.configuration_diffusion import HEADS, INFERENCE_SCHEDULERS

MIP_SAMPLER = "mip"  # what set_inference_scheduler calls the two passes
MIP_PASSES = 2
# Time t in [0, 1] enters the denoiser's sinusoidal timestep embedding as t * 100, the
# span of the diffusion timesteps the embedding is sized for, so 0 and t* are far apart.
TIME_SCALE = 100.0


def mip_loss(denoiser: nn.Module, clean: torch.Tensor, obs_features: torch.Tensor,
             text_features: torch.Tensor | None, t_star: float) -> dict[str, torch.Tensor]:
    """The two-point loss on a normalised chunk ``clean`` [B, Ta, A]; ``"loss"`` plus each pass's error."""
    batch = clean.shape[0]
    noisy = clean + (1.0 - t_star) * torch.randn_like(clean)  # x at t*
    # Both passes in one batch of 2B: the denoisers treat samples independently, so this
    # equals two calls and costs one.
    inputs = torch.cat([torch.zeros_like(clean), noisy])
    times = torch.cat([_times(0.0, batch, clean.device), _times(t_star, batch, clean.device)])
    text = None if text_features is None else text_features.repeat(2, 1)
    prediction = denoiser(inputs, times, obs_features.repeat(2, 1, 1), text).float()
    first = F.mse_loss(prediction[:batch], clean)
    second = F.mse_loss(prediction[batch:], clean)
    return {"loss": first / t_star + second / (1.0 - t_star),
            "mip_first_pass": first.detach(), "mip_second_pass": second.detach()}


def mip_sample(denoiser: nn.Module, obs_features: torch.Tensor, text_features: torch.Tensor | None,
               shape: tuple[int, int, int], t_star: float) -> torch.Tensor:
    """The normalised chunk ``[B, Ta, A]`` from the two passes; deterministic."""
    batch, device = shape[0], obs_features.device
    first = denoiser(torch.zeros(shape, device=device), _times(0.0, batch, device), obs_features, text_features)
    return denoiser(first.float(), _times(t_star, batch, device), obs_features, text_features).float()


def check_sampler_fits_head(sampler: str, head: str) -> None:
    """Refuse a sampler the policy's head cannot run, naming both: a diffusion sampler on a
    MIP-trained network, or the MIP passes on a diffusion-trained one."""
    check_choice("inference_scheduler", sampler, (*INFERENCE_SCHEDULERS, MIP_SAMPLER))
    check_choice("head", head, HEADS)
    if head == "mip" and sampler != MIP_SAMPLER:
        raise ValueError(f"sampler '{sampler}' needs a policy trained with head 'diffusion', but this policy's head is "
                         f"'mip' (two network passes, no sampler); use sampler '{MIP_SAMPLER}' or a diffusion-head "
                         "checkpoint")
    if head == "diffusion" and sampler == MIP_SAMPLER:
        raise ValueError(f"sampler '{MIP_SAMPLER}' needs a policy trained with head 'mip' (policy.head=mip), but this "
                         f"policy's head is 'diffusion'; its samplers: {', '.join(INFERENCE_SCHEDULERS)}")


def _times(t: float, batch: int, device: torch.device) -> torch.Tensor:
    return torch.full((batch,), t * TIME_SCALE, device=device)
