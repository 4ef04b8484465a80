"""Policies found by name: ``register_policy`` adds one, ``make_policy`` builds one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from robot_learn.policies.base import Policy
from robot_learn.policies.config_checks import check_model_size

_REGISTRY: dict[str, type[Policy]] = {}


def register_policy(cls: type[Policy]) -> type[Policy]:
    """Class decorator: make ``cls`` buildable by ``make_policy(cls.name, ...)``."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} needs a non-empty class attribute 'name' to be registered")
    if cls.name in _REGISTRY and _REGISTRY[cls.name] is not cls:
        raise ValueError(f"policy name '{cls.name}' is already registered by {_REGISTRY[cls.name].__name__}")
    _REGISTRY[cls.name] = cls
    return cls


def policy_names() -> tuple[str, ...]:
    """Names of all registered policies, sorted."""
    return tuple(sorted(_REGISTRY))


def get_policy_class(name: str) -> type[Policy]:
    """The class registered as ``name``; ValueError listing valid names otherwise."""
    if name not in _REGISTRY:
        raise ValueError(f"unknown policy '{name}'; valid policies: {', '.join(policy_names())}")
    return _REGISTRY[name]


def make_policy(name: str, config: Any = None, stats: Mapping[str, Mapping[str, Any]] | None = None, **kwargs: Any) -> Policy:
    """Build the policy registered as ``name``.

    ``config`` is the policy's config dataclass, a plain mapping of its fields (e.g.
    a Hydra DictConfig), or None for the defaults. ``stats`` is
    ``EpisodeStore.stats(...)`` output used for the normalisers; None leaves them as
    the identity (only sensible before ``load_state_dict``). Extra keyword arguments
    go to the policy class (for the diffusion policy: ``instructions`` to build the
    text vocabulary).
    """
    from robot_learn.policies.checkpoint import config_from_dict

    cls = get_policy_class(name)
    if config is None:
        config = cls.config_class()
    elif isinstance(config, Mapping):
        config = config_from_dict(cls.config_class, config)
    elif not isinstance(config, cls.config_class):
        raise TypeError(f"policy '{name}' expects a {cls.config_class.__name__} or a mapping, got {type(config).__name__}")
    check_model_size(lambda c: cls(c, stats=stats, **kwargs), config)
    return cls(config, stats=stats, **kwargs)
