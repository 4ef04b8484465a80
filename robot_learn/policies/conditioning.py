"""Conditioning inputs a policy declares: RECAP's advantage indicator, success conditioning.

A conditioning input is one more low-dim key in ``config.state_dims`` (1 value: +1
positive, -1 negative, 0 unconditioned), listed in ``config.conditions`` with the
value it takes when deployed. It enters through the policy's own observation
encoder; ``Policy.select_action`` fills it in, so a robot never provides it.
:func:`with_condition_input` widens a policy trained without it, zero-initialising
the new input column so the widened policy computes exactly what the base did.
"""

from __future__ import annotations

from typing import Any

import torch


def with_condition_input(base: Any, key: str, deployed: float = 1.0) -> Any:
    """A copy of ``base`` that also reads the conditioning input ``key`` (deployed at
    ``deployed``); ``base`` itself if it already declares it."""
    if key in base.conditions:
        return base
    if not hasattr(base.config, "conditions"):
        raise ValueError(f"'{base.name}' policies declare no conditioning inputs; "
                         f"conditioning needs a policy whose config has 'conditions' (e.g. diffusion)")
    if key in base.config.state_dims:
        raise ValueError(f"'{key}' is already an observation of this policy; pick another conditioning key")
    config = base.config.with_changes(state_dims={**base.config.state_dims, key: 1},
                                      conditions={**base.config.conditions, key: float(deployed)})
    policy = type(base)(config, stats=None)  # the new key's normaliser is the identity on [-1, 1]
    target = policy.state_dict()
    for name, value in base.state_dict().items():
        if target[name].shape == value.shape:
            target[name] = value.clone()
        elif value.ndim == 2 and target[name].shape[0] == value.shape[0]:
            widened = torch.zeros_like(target[name])  # the condition's column starts at zero
            widened[:, : value.shape[1]] = value
            target[name] = widened
        else:
            raise ValueError(f"cannot widen parameter {name}: {tuple(value.shape)} -> {tuple(target[name].shape)}")
    policy.load_state_dict(target)
    return policy.to(base.device)
