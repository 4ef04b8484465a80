"""Reading command-line settings with their types and ranges checked up front.

Hydra passes ``episodes=abc`` through as the string ``'abc'``; reading it with
:func:`setting` gives ``episodes must be an integer, got 'abc'`` before any work
starts, instead of a Python conversion error (which names no key) halfway through.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from omegaconf import DictConfig, OmegaConf

from robot_learn.cli.errors import CLIError

_KIND_NAMES = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}
VECTORIZATIONS = ("sync", "async", "auto")


def setting(cfg: DictConfig, key: str, kind: type, *, minimum: float | None = None,
            choices: tuple[str, ...] | None = None, optional: bool = False) -> Any:
    """``cfg``'s value at dotted ``key``, checked to be a ``kind`` (and ``>= minimum``,
    one of ``choices``; None allowed when ``optional``); CLIError naming the key otherwise."""
    value = OmegaConf.select(cfg, key, throw_on_missing=True)
    if value is None and optional:
        return None
    ok = isinstance(value, kind) and not (kind is not bool and isinstance(value, bool))
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value, ok = float(value), True
    if not ok:
        allowed = _KIND_NAMES.get(kind, kind.__name__) + (" or null" if optional else "")
        raise CLIError(f"{key} must be {allowed}, got {value!r}")
    if kind is float and not math.isfinite(value):
        raise CLIError(f"{key} must be a finite number, got {value}")
    if minimum is not None and value < minimum:
        raise CLIError(f"{key} must be >= {minimum:g}, got {value}")
    if choices is not None and value not in choices:
        raise CLIError(f"unknown {key} '{value}'; valid choices: {', '.join(choices)}")
    return value


def device_setting(cfg: DictConfig, key: str) -> str:
    """A device this machine has (``auto``, ``cpu``, ``cuda``, ``cuda:N``); CLIError otherwise."""
    from robot_learn.training.config import check_device

    value = setting(cfg, key, str)
    try:
        return check_device(value)
    except ValueError as err:
        # "train.device: unknown device ..."; a top-level "device" is named by the message itself.
        raise CLIError(f"{key}: {err}" if "." in key else str(err)) from None


@dataclass(frozen=True)
class EvalSettings:
    """The evaluation settings shared by ``eval`` and ``train``'s final evaluation."""

    episodes: int
    seed: int
    workers: int
    videos: int
    max_steps: int | None
    vectorization: str
    conditions: Any = None  # robot_learn.envs.conditions.EnvConditions; None: the defaults

    def evaluate_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for :func:`robot_learn.evaluation.evaluate`."""
        return {"episodes": self.episodes, "seed": self.seed, "workers": self.workers, "videos": self.videos,
                "max_steps": self.max_steps, "vectorization": self.vectorization, "conditions": self.conditions}


def env_conditions(cfg: DictConfig, prefix: str = "") -> Any:
    """The start spread, disturbances and drop spot an evaluation or a collection runs under (keys
    ``start_spread``, ``disturbances``, ``disturbance_probability``, ``disturbance_seed``, ``drop_spot``
    under ``prefix``; absent keys take the defaults: ``wide``, none, ``beside``). CLIError naming the
    key otherwise."""
    from robot_learn.envs.conditions import EnvConditions

    spread = OmegaConf.select(cfg, f"{prefix}start_spread", default="wide")
    kinds = OmegaConf.select(cfg, f"{prefix}disturbances", default=None)
    if kinds is None:
        kinds = []
    elif isinstance(kinds, str):  # disturbances=nudge
        kinds = [kinds]
    probability = (setting(cfg, f"{prefix}disturbance_probability", float, minimum=0.0)
                   if OmegaConf.select(cfg, f"{prefix}disturbance_probability") is not None else 1.0)
    if probability > 1.0:
        raise CLIError(f"{prefix}disturbance_probability must be <= 1, got {probability:g}")
    seed = (setting(cfg, f"{prefix}disturbance_seed", int, minimum=0)
            if OmegaConf.select(cfg, f"{prefix}disturbance_seed") is not None else 0)
    drop_spot = OmegaConf.select(cfg, f"{prefix}drop_spot", default="beside")
    try:
        return EnvConditions.of(str(spread), [str(k) for k in kinds], probability, seed, str(drop_spot))
    except ValueError as err:
        key = next((k for k in ("start_spread", "drop_spot") if k in str(err)), "disturbances")
        raise CLIError(f"{prefix}{key}: {err}") from None


def eval_settings(cfg: DictConfig, prefix: str = "") -> EvalSettings:
    """Check every evaluation setting under ``prefix`` (``"eval."`` for ``train``) before
    anything runs, so a bad one is not found only after training."""
    return EvalSettings(
        episodes=setting(cfg, f"{prefix}episodes", int, minimum=1),
        seed=setting(cfg, f"{prefix}seed", int, minimum=0),
        workers=setting(cfg, f"{prefix}workers", int, minimum=1),
        videos=setting(cfg, f"{prefix}videos", int, minimum=0),
        max_steps=setting(cfg, f"{prefix}max_steps", int, minimum=1, optional=True),
        vectorization=setting(cfg, f"{prefix}vectorization", str, choices=VECTORIZATIONS),
        conditions=env_conditions(cfg, prefix),
    )


def sampler_memory(cfg: DictConfig) -> dict[str, Any]:
    """``WindowSampler``'s memory settings from ``data.cache_gb`` and ``data.windows_per_frame``
    (``max_cache_bytes``, ``windows_per_frame``), checked; CLIError naming the key otherwise."""
    return {"max_cache_bytes": int(setting(cfg, "data.cache_gb", float, minimum=0) * 2**30),
            "windows_per_frame": setting(cfg, "data.windows_per_frame", float, minimum=0.01)}
