"""The training loop both critics use: Adam on uniformly drawn minibatches of a fixed
set of examples, reproducible from a seed."""

from __future__ import annotations

from typing import Callable, Iterable

import torch


def fit_minibatches(parameters: Iterable[torch.nn.Parameter], loss_of: Callable[[torch.Tensor], torch.Tensor],
                    num_examples: int, steps: int, batch_size: int, lr: float, seed: int) -> float:
    """Run ``steps`` Adam steps on ``loss_of(indices)`` for minibatches of
    ``min(batch_size, num_examples)`` indices drawn with replacement from a generator
    seeded with ``seed``; returns the last minibatch's loss (0 when ``steps`` is 0)."""
    opt = torch.optim.Adam(parameters, lr=lr)
    g = torch.Generator().manual_seed(seed)
    loss = torch.zeros(())
    for _ in range(steps):
        idx = torch.randint(0, num_examples, (min(batch_size, num_examples),), generator=g)
        loss = loss_of(idx)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return float(loss.detach())
