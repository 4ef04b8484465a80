"""Guiding the diffusion sampler with an objective on the predicted clean action chunk.

ReGuide's phase guidance and ITPS's steering share this one mechanism. At denoising
step t, with sample x_t, the denoiser's output and abar_t of the training schedule:

1. x0_hat = (x_t - sqrt(1 - abar_t) eps_hat) / sqrt(abar_t)      (prediction_type "epsilon";
   for "sample" the output is x0_hat itself);
2. x0_hat' = x0_hat - scale * grad cost(unnormalise(x0_hat))     (cost: the caller's objective,
   one scalar per batch element, on actions in the robot's units);
3. eps_hat' = (x_t - sqrt(abar_t) x0_hat') / sqrt(1 - abar_t)
            = eps_hat + sqrt(abar_t / (1 - abar_t)) (x0_hat - x0_hat');
4. the real diffusers scheduler (DDIM, DPM-Solver, DDPM) steps with eps_hat' as if the
   denoiser had said it.

With ``inner_steps`` > 1 (ITPS's stochastic sampling) the guided x0_hat' is noised back
to level t with fresh noise and denoised again, ``inner_steps`` times in all, before the
scheduler steps once. The gradient is taken through the objective only, never through
the denoiser, so guidance costs one objective evaluation per denoiser call.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable

import torch

ActionObjective = Callable[[torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class Guidance:
    """An objective's gradient applied at each denoising step (see the module docstring).

    ``objective`` maps an unnormalised chunk ``[B, H, A]`` to a cost ``[B]`` (lower is
    better) and must be differentiable. ``action_dim`` is the action width it reads
    (default: the objective's own ``action_dim``); a policy acting in another width is
    refused. ``max_timestep`` guides only the steps at t <= it (ReGuide's guidance start
    step); None guides every step.
    """

    objective: ActionObjective
    scale: float = 1.0
    action_dim: int | None = None
    inner_steps: int = 1
    max_timestep: int | None = None

    def __post_init__(self) -> None:
        if self.action_dim is None:
            width = getattr(self.objective, "action_dim", None)
            if width is None:
                raise ValueError("guidance needs the action width its objective reads: pass action_dim=... "
                                 "or give the objective an action_dim attribute")
            object.__setattr__(self, "action_dim", int(width))
        if not (math.isfinite(self.scale) and self.scale >= 0):
            raise ValueError(f"guidance scale must be a finite number >= 0, got {self.scale}")
        if self.inner_steps < 1:
            raise ValueError(f"guidance inner_steps must be >= 1, got {self.inner_steps}")

    def check_fits(self, policy: Any) -> None:
        """ValueError unless ``policy`` samples by diffusion in the objective's action width."""
        if not hasattr(policy, "denoise"):
            raise ValueError(f"guidance steers a continuous diffusion policy's denoising steps; this policy is "
                             f"'{getattr(policy, 'name', type(policy).__name__)}'")
        if policy.action_dim != self.action_dim:
            raise ValueError(f"the guidance objective reads {self.action_dim}-dim actions but the policy acts "
                             f"in {policy.action_dim} dims (action_dim {policy.action_dim})")
        if policy.config.head != "diffusion":
            raise ValueError(f"guidance steers the denoising steps of head 'diffusion'; this policy's head is "
                             f"'{policy.config.head}'")

    def guide(self, policy: Any, predict: Callable[[torch.Tensor], torch.Tensor], sample: torch.Tensor,
              model_output: torch.Tensor, t: int,
              generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """The sample and model output the scheduler steps with at timestep ``t``.

        ``policy`` lends its training schedule (``noise_scheduler``), ``config.prediction_type``
        and ``action_normalizer``; ``predict(x)`` is the denoiser at ``t`` (inner steps call it)."""
        if self.max_timestep is not None and t > self.max_timestep:
            return sample, model_output
        prediction_type = policy.config.prediction_type
        abar = policy.noise_scheduler.alphas_cumprod[t].to(sample.device, torch.float32)
        for inner in range(self.inner_steps):
            clean = predicted_clean(sample, model_output, abar, prediction_type)
            grad = self.gradient(clean, policy.action_normalizer.unnormalize,
                                 clip=policy.config.clip_sample_range if policy.config.clip_sample else None)
            steered = clean - self.scale * grad
            model_output = output_for_clean(model_output, clean, steered, abar, prediction_type)
            if inner == self.inner_steps - 1:
                break
            # Re-noise the guided chunk back to level t and denoise it again (ITPS's inner step).
            if policy.config.clip_sample:
                steered = policy.clamp_chunk(steered)
            noise_device = generator.device if generator is not None else sample.device
            noise = torch.randn(sample.shape, generator=generator, device=noise_device).to(sample.device)
            level = torch.full((sample.shape[0],), t, dtype=torch.long, device=sample.device)
            sample = policy.noise_scheduler.add_noise(steered, noise, level).float()
            model_output = predict(sample)
        return sample, model_output

    def gradient(self, clean: torch.Tensor, unnormalize: Callable[[torch.Tensor], torch.Tensor],
                 clip: float | None = None) -> torch.Tensor:
        """d cost / d x0_hat for the normalised chunk ``clean`` ``[B, H, A]``. With ``clip`` (a bound,
        e.g. 1.0) the cost is taken at x0_hat clipped to [-clip, clip], the chunk the scheduler will
        use, and its gradient passed straight through the clip (so a far-out x0_hat at a noisy step
        is still pulled)."""
        with torch.enable_grad():
            chunk = clean.detach().requires_grad_(True)
            seen = chunk + (chunk.clamp(-clip, clip) - chunk).detach() if clip is not None else chunk
            cost = self.objective(unnormalize(seen))
            if cost.shape != (chunk.shape[0],):
                raise ValueError(f"a guidance objective returns one cost per batch element, shape "
                                 f"({chunk.shape[0]},); got {tuple(cost.shape)}")
            (grad,) = torch.autograd.grad(cost.sum(), chunk)
        return grad


def predicted_clean(sample: torch.Tensor, model_output: torch.Tensor, abar: torch.Tensor,
                    prediction_type: str) -> torch.Tensor:
    """x0_hat at a step whose cumulative signal is ``abar``: the denoiser's output itself
    (``"sample"``) or (x_t - sqrt(1 - abar) eps_hat) / sqrt(abar) (``"epsilon"``)."""
    if prediction_type == "sample":
        return model_output
    return (sample - (1.0 - abar).sqrt() * model_output) / abar.sqrt()


def output_for_clean(model_output: torch.Tensor, clean: torch.Tensor, steered: torch.Tensor, abar: torch.Tensor,
                     prediction_type: str) -> torch.Tensor:
    """The model output that predicts ``steered`` where ``model_output`` predicted ``clean``
    (from the same sample x_t)."""
    if prediction_type == "sample":
        return steered
    # eps' = eps + sqrt(abar / (1 - abar)) (x0_hat - x0_hat'): exact, and eps itself when unguided.
    return model_output + (abar / (1.0 - abar)).sqrt() * (clean - steered)


def ordinary_tensors(tree: Any) -> Any:
    """Clones of every tensor in ``tree`` (nested mappings), made where this is called: under
    ``torch.inference_mode(False)`` they are tensors autograd can use, unlike inference-mode ones
    (evaluation samples under inference mode; a guidance gradient needs ordinary tensors)."""
    if isinstance(tree, torch.Tensor):
        return tree.clone()
    if isinstance(tree, Mapping):
        return {k: ordinary_tensors(v) for k, v in tree.items()}
    return tree
