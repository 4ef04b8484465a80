"""Checks shared by the policy configs: each raises ``ValueError`` naming the bad
setting, its value and what would be valid.

Both policy configs (continuous and discrete diffusion) describe the same
receding-horizon contract of :class:`~robot_learn.policies.Policy` (observe
``obs_horizon`` steps, predict ``action_horizon`` actions, execute
``execute_horizon`` of them), so they validate it with the same words.
"""

from __future__ import annotations

import dataclasses
import os
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any


def check_field_types(config: Any) -> None:
    """Refuse a dataclass ``config`` whose field values do not have their annotated types:
    "<name> must be an integer, got 'two'". Call it first in ``__post_init__``, before
    values are converted or compared (``int("two")`` or ``"two" < 1`` name no key).

    Checks int, float (an int is fine), bool, str, lists/tuples/dicts of those and
    ``X | None``; fields of other types are left to their own checks.
    """
    hints = typing.get_type_hints(type(config))
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        expected = _type_mismatch(value, hints[f.name])
        if expected is not None:
            raise ValueError(f"{f.name} must be {expected}, got {value!r}")


_SCALARS = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}


def _type_mismatch(value: Any, hint: Any) -> str | None:
    """What ``value`` should have been if it does not fit ``hint``; None when it fits
    (or ``hint`` is not a kind checked here)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint in _SCALARS:
        if hint is float:
            fits = isinstance(value, (int, float)) and not isinstance(value, bool)
        else:
            fits = isinstance(value, hint) and (hint is bool or not isinstance(value, bool))
        return None if fits else _SCALARS[hint]
    if origin in (typing.Union, types.UnionType):
        misses = [_type_mismatch(value, arm) for arm in args]
        if any(m is None for m in misses):
            return None
        return " or ".join("null" if arm is type(None) else m for arm, m in zip(args, misses) if m or arm is type(None))
    if hint is type(None):
        return None if value is None else "null"
    if origin in (list, tuple):
        if not isinstance(value, Sequence) or isinstance(value, (str, bytes)):
            return "a list"
        item = args[0] if args else Any
        for element in value:
            miss = _type_mismatch(element, item)
            if miss is not None:
                return f"a list of {_plural(miss)}"
        return None
    if origin is dict:
        if not isinstance(value, Mapping):
            return "a mapping"
        item = args[1] if len(args) == 2 else Any
        for element in value.values():
            miss = _type_mismatch(element, item)
            if miss is not None:
                return f"a mapping to {_plural(miss)}"
    return None


def _plural(kind: str) -> str:
    return {"an integer": "integers", "a number": "numbers", "a string": "strings"}.get(kind, kind)


def check_choice(name: str, value: str, valid: tuple[str, ...]) -> None:
    """Refuse ``value`` unless it is one of ``valid``: "unknown <name> '<value>'; valid choices: ..."."""
    if value not in valid:
        raise ValueError(f"unknown {name} '{value}'; valid choices: {', '.join(valid)}")


def check_at_least(config: Any, names: Iterable[str], minimum: float) -> None:
    """Refuse any of ``config``'s fields ``names`` below ``minimum``: "<name> must be >= <minimum>, got ..."."""
    for name in names:
        value = getattr(config, name)
        if value < minimum:
            raise ValueError(f"{name} must be >= {minimum}, got {value}")


def check_observes_something(config: Any) -> None:
    """Refuse a config with neither low-dim keys (``state_dims``) nor cameras."""
    if not config.state_dims and not config.camera_names:
        raise ValueError(
            f"{type(config).__name__} needs state_dims or camera_names (the policy must observe something)"
        )


def longest_execute_horizon(config: Any) -> int:
    """The most actions of a chunk ``select_action`` can execute: it executes chunk indices
    ``obs_horizon - 1 .. obs_horizon - 2 + execute_horizon``."""
    return config.action_horizon - config.obs_horizon + 1


def check_execution_fits_chunk(config: Any) -> None:
    """Refuse horizons whose executed actions would run past the predicted chunk."""
    if config.execute_horizon > longest_execute_horizon(config):
        raise ValueError(
            f"obs_horizon - 1 + execute_horizon must be <= action_horizon (the executed actions start at the "
            f"current step, index obs_horizon - 1); got {config.obs_horizon} - 1 + {config.execute_horizon} "
            f"> {config.action_horizon}"
        )


def check_model_size(build: Callable[[Any], Any], config: Any, memory_bytes: int | None = None) -> None:
    """Refuse a config whose model could not fit in memory, before any weight is allocated.

    ``build(config)`` runs once on PyTorch's ``meta`` device (shapes only, no
    memory) to count parameters. If their fp32 weights alone would take more than
    half of ``memory_bytes`` (default: this machine's RAM; training needs about five
    times the weights: gradients, two AdamW moments and the EMA copy), raises
    ValueError naming the setting that makes the model big. A config whose model
    cannot be built on ``meta`` (e.g. one loading pretrained files) is not checked.
    """
    memory = memory_bytes if memory_bytes is not None else _physical_memory()
    count = _count_parameters(build, config)
    if count is None or memory is None or 4 * count <= memory / 2:
        return
    culprit = _largest_setting(build, config, count)
    raise ValueError(
        f"policy too large: {count:.3g} parameters need {4 * count / 1e9:,.1f} GB as fp32 weights (about 5x that "
        f"to train), more than half of this machine's {memory / 1e9:,.1f} GB of memory"
        + (f"; most of it comes from {culprit}" if culprit else ""))


def _count_parameters(build: Callable[[Any], Any], config: Any) -> int | None:
    import torch

    try:
        with torch.device("meta"):
            model = build(config)
    except Exception:  # not buildable on meta (pretrained files): left to the real build
        return None
    return sum(p.numel() for p in model.parameters())


def _physical_memory() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not available on this platform
        return None


def _largest_setting(build: Callable[[Any], Any], config: Any, count: int) -> str | None:
    """``"name=value (default ...)"`` for the size setting whose default shrinks the model most."""
    best: tuple[int, str] | None = None
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        if default is dataclasses.MISSING or value == default or not _is_size(value):
            continue
        try:
            smaller = _count_parameters(build, dataclasses.replace(config, **{f.name: default}))
        except ValueError:  # the default does not fit the other settings
            continue
        if smaller is not None and smaller < count and (best is None or smaller < best[0]):
            best = (smaller, f"{f.name}={value!r} (default {default!r})")
    return best[1] if best else None


def _is_size(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return bool(value) and all(_is_size(v) for v in value)
    return isinstance(value, int) and not isinstance(value, bool)
