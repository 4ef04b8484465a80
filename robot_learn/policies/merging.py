"""RETAIN weight merging: θ = (1 − α)·θ_base + α·θ_ft, with α per module.

Merging interpolates the parameters of a fine-tuned policy back towards its base
(α = 1: the fine-tuned policy, α = 0: the base), trading target-task gains for
retention of what the base could do. ``alpha`` is one number or ``{module prefix:
α}`` with an optional ``"default"``; the longest prefix matching a parameter's name
wins (e.g. ``{"default": 0.5, "obs_encoder": 0.2}`` keeps the encoders closer to
the base). Buffers (the normalisers' statistics) are the fine-tuned policy's.
"""

from __future__ import annotations

import copy
from typing import Any, Mapping

import torch


def check_alpha(alpha: float | Mapping[str, float]) -> dict[str, float]:
    """``alpha`` as ``{prefix: α}`` (a number -> ``{"default": α}``); ValueError outside [0, 1]."""
    table = {"default": float(alpha)} if isinstance(alpha, (int, float)) else \
        {str(k): float(v) for k, v in dict(alpha).items()}
    bad = {k: v for k, v in table.items() if not 0.0 <= v <= 1.0}
    if bad:
        raise ValueError(f"merge alpha must lie in [0, 1]; got {bad}")
    return table


def alpha_for(name: str, table: Mapping[str, float]) -> float:
    """The α of parameter ``name``: its longest matching module prefix, else ``"default"`` (else 1)."""
    matches = [p for p in table if p != "default" and (name == p or name.startswith(p + "."))]
    return table[max(matches, key=len)] if matches else table.get("default", 1.0)


def merge_policies(base: Any, finetuned: Any, alpha: float | Mapping[str, float]) -> Any:
    """A copy of ``finetuned`` with parameters ``(1 − α)·base + α·finetuned`` (see the module
    docstring). ValueError when the two policies differ in architecture (type, config
    shapes, parameter names or shapes), naming the first difference."""
    table = check_alpha(alpha)
    unknown = [p for p in table if p != "default"
               and not any(n == p or n.startswith(p + ".") for n, _ in finetuned.named_parameters())]
    if unknown:
        modules = sorted({n.split(".")[0] for n, _ in finetuned.named_parameters()})
        raise ValueError(f"merge alpha names modules {unknown} that the policy lacks; its modules: "
                         f"{', '.join(modules)} (or 'default')")
    if type(base) is not type(finetuned):
        raise ValueError(f"cannot merge policies of different architectures: "
                         f"'{base.name}' and '{finetuned.name}'")
    base_params, ft_params = dict(base.named_parameters()), dict(finetuned.named_parameters())
    if set(base_params) != set(ft_params):
        only = sorted(set(base_params) ^ set(ft_params))
        raise ValueError(f"cannot merge policies of different architectures: parameter {only[0]} "
                         f"is in only one of them ({len(only)} such parameters)")
    for name, value in ft_params.items():
        if base_params[name].shape != value.shape:
            raise ValueError(f"cannot merge policies of different architectures: parameter {name} has shape "
                             f"{tuple(base_params[name].shape)} in the base, {tuple(value.shape)} fine-tuned")
    merged = copy.deepcopy(finetuned)
    with torch.no_grad():
        for name, param in merged.named_parameters():
            a = alpha_for(name, table)
            param.copy_((1.0 - a) * base_params[name].to(param.device) + a * ft_params[name])
    return merged
