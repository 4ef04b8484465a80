"""The conditions an episode runs under: its start distribution and its disturbances.

An :class:`EnvConditions` is what ``task.start_spread`` and ``task.disturbances`` say in a
config. :meth:`EnvConditions.make_env` builds a task's env under them: the plain env
of :func:`~robot_learn.envs.make_env` when they are the defaults (``wide``, no
disturbances), otherwise that env wrapped so every reset asks for the spread
(:class:`StartSpreadWrapper`) and disturbances happen (:class:`DisturbanceWrapper`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import gymnasium as gym

from .disturbances import Disturbances, DisturbanceWrapper
from .start_spread import DEFAULT_START_SPREAD, START_SPREADS, start_spread


class StartSpreadWrapper(gym.Wrapper):
    """Resets its tabletop env with ``options={"start_spread": spread}`` (see :mod:`.start_spread`)."""

    def __init__(self, env: gym.Env, spread: str) -> None:
        super().__init__(env)
        self.spread = start_spread(spread).name

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        return self.env.reset(seed=seed, options={"start_spread": self.spread, **(options or {})})


@dataclass(frozen=True)
class EnvConditions:
    """A start spread (``wide``, the default, ``medium`` or ``narrow``) and optional disturbances."""

    start_spread: str = DEFAULT_START_SPREAD
    disturbances: Disturbances | None = None

    def __post_init__(self) -> None:
        start_spread(self.start_spread)  # ValueError lists the valid spreads

    @classmethod
    def of(cls, start_spread: str = DEFAULT_START_SPREAD, disturbances: Sequence[str] = (),
           disturbance_probability: float = 1.0, disturbance_seed: int = 0) -> "EnvConditions":
        """From config values: a spread name, a list of disturbance kinds sharing one
        probability per episode, and the disturbances' seed."""
        kinds = list(disturbances or [])
        return cls(start_spread, Disturbances.of(kinds, disturbance_probability, disturbance_seed) if kinds else None)

    @property
    def is_default(self) -> bool:
        """The conditions every task had before spreads and disturbances existed."""
        return self.start_spread == DEFAULT_START_SPREAD and not (self.disturbances and self.disturbances.kinds)

    def describe(self) -> str:
        """A short label, e.g. ``narrow`` or ``wide + nudge p=0.5, slip``."""
        d = self.disturbances
        kinds = [k if d.probabilities[k] == 1.0 else f"{k} p={d.probabilities[k]:g}" for k in d.kinds] if d else []
        return " + ".join([self.start_spread, ", ".join(kinds)] if kinds else [self.start_spread])

    def make_env(self, task: str, **kwargs: Any) -> gym.Env:
        """``make_env(task, **kwargs)`` under these conditions; ValueError for an external
        task under anything but the defaults."""
        from .external import is_external_task
        from .registry import TASK_NAMES, make_env

        if not self.is_default and is_external_task(task):
            raise ValueError(f"start_spread and disturbances are for our tabletop tasks ({', '.join(TASK_NAMES)}); "
                             f"external task {task!r} runs its benchmark's own resets: leave start_spread at "
                             f"{DEFAULT_START_SPREAD!r} ({', '.join(START_SPREADS)}) and disturbances empty")
        env = make_env(task, **kwargs)
        if self.start_spread != DEFAULT_START_SPREAD:
            env = StartSpreadWrapper(env, self.start_spread)
        if self.disturbances and self.disturbances.kinds:
            env = DisturbanceWrapper(env, self.disturbances)
        return env


DEFAULT_CONDITIONS = EnvConditions()
