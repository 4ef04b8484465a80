"""Phase-conditioned guidance (ReGuide's PCG) on the sampler's guidance hook.

Before each chunk the sampler reads the current features f_t (state, or the frame
encoder's features) and keeps a phase per batch element. At each denoising step at or
below ``max_timestep`` the hook (``guidance.py``) hands the predicted clean chunk x0_hat
to :class:`PhaseObjective`, which
1. rolls the latent dynamics forward: f_hat = g(f_t, x0_hat[start : start + k]);
2. takes the soft-min distance d of f_hat to the current phase's prototypes (and d_next
   to the next phase's);
3. returns d where lower < d <= upper (drifted but recoverable) and the next phase is not
   near (d_next >= d - margin), else 0, so the gradient step x0_hat - scale * grad d moves
   only drifted chunks and leaves the rest bit-identical.

The phase advances when, on the observed features, d_next < d_cur - margin and d_next is
below the next phase's upper threshold for ``persistence`` consecutive chunks.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from robot_learn.policies.diffusion.guidance import Guidance, ordinary_tensors
from robot_learn.policies.frame_encoder import FEATURES_KEY
from robot_learn.policies.latent_dynamics import STATE_ENCODER, LatentDynamics
from robot_learn.policies.phase_prototypes import PhasePrototypes


@dataclass(frozen=True)
class PCGSettings:
    """Guidance scale c, the guidance start step, and the phase-advance rule."""

    scale: float = 0.05
    max_timestep: int | None = 20
    margin: float = 0.15
    persistence: int = 2

    def __post_init__(self) -> None:
        if not (math.isfinite(self.scale) and self.scale >= 0):
            raise ValueError(f"pcg scale must be a finite number >= 0, got {self.scale}")
        if self.margin < 0 or self.persistence < 1:
            raise ValueError(f"pcg needs margin >= 0 and persistence >= 1, got {self.margin} and {self.persistence}")


class PhaseObjective:
    """Cost of a chunk: d(f_hat, the current phase's prototypes), only inside the band."""

    kind = "pcg"

    def __init__(self, dynamics: LatentDynamics, prototypes: PhasePrototypes, start: int, margin: float) -> None:
        self.dynamics, self.prototypes, self.start, self.margin = dynamics, prototypes, int(start), float(margin)
        self.action_dim = dynamics.config.action_dim
        self.current: torch.Tensor | None = None   # [B, D] observed features, set before each chunk
        self.phase: torch.Tensor | None = None     # [B] phase index
        self.guided: torch.Tensor | None = None    # [B] bool: guided at some step of this chunk

    def distances(self, chunk: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(d, d_next)`` ``[B]`` of the features the chunk's first k actions lead to."""
        k = self.dynamics.config.horizon
        future = self.dynamics(self.current, chunk[:, self.start:self.start + k])
        z = self.prototypes.embed(future, self.current)
        last = self.prototypes.num_phases - 1
        return self.prototypes.distance(z, self.phase), self.prototypes.distance(z, (self.phase + 1).clamp(max=last))

    def __call__(self, chunk: torch.Tensor) -> torch.Tensor:
        d, d_next = self.distances(chunk)
        lower, upper = self.prototypes.lower.to(d)[self.phase], self.prototypes.upper.to(d)[self.phase]
        has_next = self.phase < self.prototypes.num_phases - 1
        gate = ((d > lower) & (d <= upper) & ~(has_next & (d_next < d - self.margin))).detach()
        self.guided = gate if self.guided is None else self.guided | gate
        return d * gate.to(d.dtype)


class PhaseGuidedSampler:
    """Samples a :class:`DiffusionPolicy`'s chunks with PCG; call it as ``predict_action_chunk``
    is called, or pass it to ``select_action(obs, predict=...)``; :meth:`reset` at episode start.

    ValueError, before anything runs, when the dynamics model and the prototypes disagree on
    task or encoder, when the policy acts in another action width, plans too short a chunk
    for the dynamics horizon, or does not observe the features the guide reads."""

    def __init__(self, policy: Any, dynamics: LatentDynamics, prototypes: PhasePrototypes,
                 settings: PCGSettings | None = None) -> None:
        self.policy, self.settings = policy, settings or PCGSettings()
        cfg = dynamics.config
        if (cfg.task, cfg.encoder) != (prototypes.task, prototypes.encoder) or cfg.feature_dim != prototypes.feature_dim:
            raise ValueError(f"the dynamics model (task '{cfg.task}', encoder '{cfg.encoder}', {cfg.feature_dim} "
                             f"features) and the phase prototypes (task '{prototypes.task}', encoder "
                             f"'{prototypes.encoder}', {prototypes.feature_dim} features) were not built together")
        start = policy.obs_horizon - 1
        if start + cfg.horizon > policy.action_horizon:
            raise ValueError(f"the dynamics model reads {cfg.horizon} actions but the policy plans "
                             f"{policy.action_horizon - start} from the current step (action_horizon "
                             f"{policy.action_horizon}, obs_horizon {policy.obs_horizon})")
        self._check_features(policy, cfg.encoder, cfg.feature_keys)
        self.dynamics, self.prototypes = dynamics.requires_grad_(False).eval(), prototypes
        self.objective = PhaseObjective(self.dynamics, prototypes, start, self.settings.margin)
        self.guidance = Guidance(self.objective, scale=self.settings.scale, max_timestep=self.settings.max_timestep)
        self.guidance.check_fits(policy)  # the action width, named with both
        self.label = f"pcg (scale {self.settings.scale})"
        self.chunks = self.guided_chunks = 0  # over every episode this sampler has run
        self.reset()

    @staticmethod
    def _check_features(policy: Any, encoder: str, keys: list[str]) -> None:
        if encoder == STATE_ENCODER:
            missing = [k for k in keys if k not in policy.obs_shapes]
            if missing:
                raise ValueError(f"the guide reads {keys} but the policy observes {sorted(policy.obs_shapes)}; "
                                 f"train the policy with {missing} or the guide on the policy's keys")
            return
        mine = policy.frame_encoder.identity() if policy.frame_encoder is not None else "none (a state policy)"
        if mine != encoder:
            raise ValueError(f"the guide reads features of frame encoder '{encoder}' but the policy's frame encoder "
                             f"is '{mine}'")

    def reset(self) -> None:
        """Forget phases (episode start); the counts of chunks and guided chunks go on."""
        self.phase: torch.Tensor | None = None
        self.count: torch.Tensor | None = None
        self.previous: torch.Tensor | None = None

    def features(self, obs: Mapping[str, Any]) -> torch.Tensor:
        """The current step's features ``[B, D]`` from an observation history."""
        keys = self.dynamics.config.feature_keys
        if self.dynamics.config.encoder != STATE_ENCODER:
            obs = self.policy.with_frame_features(obs)
        return torch.cat([torch.as_tensor(obs[k])[:, -1].float() for k in keys], dim=-1)

    def _advance(self, current: torch.Tensor) -> None:
        """The margin-and-persistence rule on the observed features."""
        batch, last = current.shape[0], self.prototypes.num_phases - 1
        if self.phase is None or self.phase.shape[0] != batch:
            self.phase = torch.zeros(batch, dtype=torch.long, device=current.device)
            self.count = torch.zeros_like(self.phase)
            self.previous = current
        z = self.prototypes.embed(current, self.previous)
        following = (self.phase + 1).clamp(max=last)
        d, d_next = self.prototypes.distance(z, self.phase), self.prototypes.distance(z, following)
        closer = (self.phase < last) & (d_next < d - self.settings.margin)
        closer &= d_next < self.prototypes.upper.to(d)[following]
        self.count = torch.where(closer, self.count + 1, torch.zeros_like(self.count))
        moved = self.count >= self.settings.persistence
        self.phase = torch.where(moved, following, self.phase)
        self.count = torch.where(moved, torch.zeros_like(self.count), self.count)
        self.previous = current

    def __call__(self, obs: Mapping[str, Any], generator: torch.Generator | None = None) -> torch.Tensor:
        """A PCG-steered unnormalised chunk ``[B, action_horizon, A]``."""
        # Evaluation samples under inference_mode, whose tensors autograd cannot use: leave it
        # and copy the observations into ordinary tensors for the guidance gradient.
        with torch.inference_mode(False):
            obs = ordinary_tensors(obs)
            current = self.features(obs)
            self._advance(current)
            self.objective.current, self.objective.phase, self.objective.guided = current, self.phase, None
            chunk = self.policy.predict_action_chunk(obs, generator=generator, guidance=self.guidance)
        guided = self.objective.guided
        self.chunks += current.shape[0]
        self.guided_chunks += 0 if guided is None else int(guided.sum())
        return chunk

