"""The cosine masking schedule shared by training and MaskGIT decoding.

``t`` is the noise level: t = 1 is the fully masked chunk decoding starts from, t = 0
the clean chunk. gamma(t) = cos(pi/2 * (1 - t)) (MaskGIT's cosine schedule, with
its "progress" r = 1 - t).
"""

from __future__ import annotations

import math

import torch


def mask_ratio(t: torch.Tensor | float) -> torch.Tensor:
    """Fraction of tokens masked at noise level ``t`` in [0, 1]: 1 at t=1, exactly 0 at t=0."""
    t = torch.as_tensor(t, dtype=torch.float32)
    if bool(((t < 0) | (t > 1)).any()):
        raise ValueError(f"noise level t must be in [0, 1], got {t.tolist()}")
    ratio = torch.cos(math.pi / 2 * (1.0 - t))
    return torch.where(t <= 0, torch.zeros_like(ratio), ratio.clamp(0.0, 1.0))


def masked_count_after_round(round_index: int, rounds: int, length: int) -> int:
    """Tokens still masked after decoding round ``round_index`` (0-based) of ``rounds``.

    floor(L * cos(pi/2 * (k+1)/K)), clamped to [1, L-1] before the last round so each
    round commits at least one token and leaves one to refine; 0 after the last round.
    """
    if round_index >= rounds - 1:
        return 0
    n = math.floor(length * math.cos(math.pi / 2 * (round_index + 1) / rounds))
    return int(min(max(n, 1), max(length - 1, 1)))


def sample_training_mask(batch: int, length: int, generator: torch.Generator | None = None,
                         device: torch.device | str = "cpu") -> torch.Tensor:
    """Bool ``[batch, length]``: per sample, t ~ U(0, 1) and ceil(gamma(t) * L) positions
    (at least one) chosen uniformly at random are masked."""
    t = torch.rand(batch, generator=generator, device=device)
    counts = torch.ceil(mask_ratio(t.cpu()).to(device) * length).clamp(1, length).long()
    scores = torch.rand(batch, length, generator=generator, device=device)
    ranks = scores.argsort(dim=1).argsort(dim=1)  # rank of each position's random score
    return ranks < counts[:, None]
