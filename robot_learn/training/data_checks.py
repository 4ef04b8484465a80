"""Checks on the training data made before the first step."""

from __future__ import annotations

from typing import Any

from robot_learn.training.distributed import DistContext


def check_sampler_data(sampler: Any) -> None:
    """Refuse non-finite data before spending compute on it.

    Calls ``sampler.store.check_finite(keys)`` over the keys the sampler reads
    (``obs_keys`` and ``action_key``); the store's ``StoreError`` names the key,
    episode and step. Samplers without a ``store`` are not checked.
    """
    store = getattr(sampler, "store", None)
    if store is None or not hasattr(store, "check_finite"):
        return
    keys = [*getattr(sampler, "obs_keys", ()), getattr(sampler, "action_key", None)]
    # Derived arrays (e.g. cached frame features) are checked by the sampler itself.
    keys = list(dict.fromkeys(k for k in keys if k and k in store.keys))
    store.check_finite(keys or None)


def check_rank_samplers_differ(sampler: Any, ctx: DistContext) -> None:
    """Under DDP, refuse identical sampler streams: every rank would train on the same windows."""
    if not ctx.distributed:
        return
    states = ctx.gather_objects(sampler.state_dict())
    try:
        same = [r for r in range(1, len(states)) if states[r] == states[0]]
    except (RuntimeError, ValueError):  # states holding tensors/arrays cannot be compared this way
        return
    if same:
        raise ValueError(
            f"ranks 0 and {same} have identical sampler states; give each rank its own sampler seed, "
            "e.g. WindowSampler(..., seed=rank_seed(seed))"
        )
