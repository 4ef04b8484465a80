"""RECAP's policy side: an advantage input on the diffusion policy, and sampling conditioned on it.

The indicator enters as one more low-dim observation key, ``"advantage"`` (1 value:
+1 positive, -1 negative, 0 unconditioned), through the policy's existing state
encoder, so ``DiffusionPolicy`` itself is unchanged. :func:`add_advantage_input`
widens a policy trained without it, zero-initialising the new input column so
the widened policy starts out computing exactly what the base policy did.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from robot_learn.loops.aggregation import ADVANTAGE_STATS

ADVANTAGE_KEY = "advantage"


def add_advantage_input(base: Any) -> Any:
    """A copy of ``base`` (a DiffusionPolicy) that also reads ``obs["advantage"]``."""
    if ADVANTAGE_KEY in base.config.state_dims:
        return base
    config = base.config.with_changes(state_dims={**base.config.state_dims, ADVANTAGE_KEY: 1})
    policy = type(base)(config, stats=None)
    policy.obs_encoder.state_encoder.normalizers[ADVANTAGE_KEY] = type(
        base.obs_encoder.state_encoder.normalizers[next(iter(base.config.state_dims))])(1, ADVANTAGE_STATS,
                                                                                      name=ADVANTAGE_KEY)
    target = policy.state_dict()
    for name, value in base.state_dict().items():
        if name not in target:
            continue
        if target[name].shape == value.shape:
            target[name] = value.clone()
        elif value.ndim == 2 and target[name].shape[0] == value.shape[0]:
            widened = torch.zeros_like(target[name])  # the advantage column starts at zero
            widened[:, : value.shape[1]] = value
            target[name] = widened
        else:
            raise ValueError(f"cannot widen parameter {name}: {tuple(value.shape)} -> {tuple(target[name].shape)}")
    policy.load_state_dict(target)
    return policy


class AdvantageConditioned(nn.Module):
    """Presents an advantage-conditioned policy as an ordinary one: ``obs_shapes``
    without ``"advantage"``, which :meth:`select_action` fills with ``value`` (+1: positive)."""

    def __init__(self, policy: Any, value: float = 1.0) -> None:
        super().__init__()
        self.policy, self.value = policy, float(value)

    def __getattr__(self, name: str) -> Any:
        # Everything else (horizons, action_dim, config, ...) is the wrapped policy's.
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._modules["policy"], name)

    @property
    def obs_shapes(self) -> dict[str, tuple[int, ...]]:
        return {k: v for k, v in self.policy.obs_shapes.items() if k != ADVANTAGE_KEY}

    @property
    def device(self) -> torch.device:
        return self.policy.device

    def reset(self) -> None:
        self.policy.reset()

    def select_action(self, obs: dict[str, Any], generator: torch.Generator | None = None) -> torch.Tensor:
        batch = next(len(v) for k, v in obs.items() if k != "instruction" and not isinstance(v, dict))
        obs = {**obs, ADVANTAGE_KEY: np.full((batch, 1), self.value, dtype=np.float32)}
        return self.policy.select_action(obs, generator=generator)
