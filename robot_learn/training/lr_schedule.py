"""Learning-rate schedule: linear warmup, then cosine decay to zero."""

from __future__ import annotations

import math

import torch
from torch.optim.lr_scheduler import LambdaLR


def warmup_cosine_factor(step: int, warmup_steps: int, total_steps: int) -> float:
    """Multiplier on the base LR for the update with index ``step`` (0-based).

    Warmup rises linearly to 1 at ``step = warmup_steps - 1`` (the first update
    already moves, unlike schedules that start at exactly 0); afterwards
    ``0.5 * (1 + cos(pi * progress))`` falls to 0 at ``step = total_steps``.
    """
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    decay_steps = max(1, total_steps - warmup_steps)
    progress = min(1.0, (step - warmup_steps) / decay_steps)
    return 0.5 * (1.0 + math.cos(math.pi * progress))


def make_warmup_cosine_scheduler(
    optimizer: torch.optim.Optimizer, warmup_steps: int, total_steps: int
) -> LambdaLR:
    """A ``LambdaLR`` following :func:`warmup_cosine_factor`.

    The lambda is a plain closure, so ``state_dict()`` stores only the step count:
    a resumed run follows the schedule of its *current* config.
    """
    warmup = min(warmup_steps, total_steps)

    def factor(step: int) -> float:
        return warmup_cosine_factor(step, warmup, total_steps)

    return LambdaLR(optimizer, factor)
