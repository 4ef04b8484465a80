"""The conditions an episode runs under: its start distribution and its disturbances.

An :class:`EnvConditions` is what ``task.start_spread`` and ``task.disturbances`` say in a
config, and, for reverse tasks, where the white square lies (``drop_spot``). :meth:`EnvConditions.make_env`
builds a task's env under them: the plain env of :func:`~robot_learn.envs.make_env` when
they are the defaults (``wide``, spot ``beside``, no disturbances), otherwise that env
built with that drop spot, and wrapped so every reset asks for the spread
(:class:`StartSpreadWrapper`) and disturbances happen (:class:`DisturbanceWrapper`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import gymnasium as gym

from .disturbances import Disturbances, DisturbanceWrapper
from .start_spread import DEFAULT_START_SPREAD, START_SPREADS, start_spread
from .task_base import DEFAULT_DROP_SPOT, DROP_SPOTS


class StartSpreadWrapper(gym.Wrapper):
    """Resets its tabletop env with ``options={"start_spread": spread}`` (see :mod:`.start_spread`)."""

    def __init__(self, env: gym.Env, spread: str) -> None:
        super().__init__(env)
        self.spread = start_spread(spread).name

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        return self.env.reset(seed=seed, options={"start_spread": self.spread, **(options or {})})


@dataclass(frozen=True)
class EnvConditions:
    """A start spread (``wide``, the default, ``medium`` or ``narrow``), optional disturbances,
    and a reverse task's drop spot (``beside`` the target, the default, or ``anywhere``)."""

    start_spread: str = DEFAULT_START_SPREAD
    disturbances: Disturbances | None = None
    drop_spot: str = DEFAULT_DROP_SPOT

    def __post_init__(self) -> None:
        start_spread(self.start_spread)  # ValueError lists the valid spreads
        if self.drop_spot not in DROP_SPOTS:
            raise ValueError(f"unknown drop_spot {self.drop_spot!r}; valid: {', '.join(DROP_SPOTS)}")

    @classmethod
    def of(cls, start_spread: str = DEFAULT_START_SPREAD, disturbances: Sequence[str] = (),
           disturbance_probability: float = 1.0, disturbance_seed: int = 0,
           drop_spot: str = DEFAULT_DROP_SPOT) -> "EnvConditions":
        """From config values: a spread name, a list of disturbance kinds sharing one
        probability per episode, the disturbances' seed and a reverse task's drop spot."""
        kinds = list(disturbances or [])
        return cls(start_spread, Disturbances.of(kinds, disturbance_probability, disturbance_seed) if kinds else None,
                   drop_spot)

    @property
    def is_default(self) -> bool:
        """The conditions every task had before spreads and disturbances existed."""
        return (self.start_spread == DEFAULT_START_SPREAD and self.drop_spot == DEFAULT_DROP_SPOT
                and not (self.disturbances and self.disturbances.kinds))

    def describe(self) -> str:
        """A short label, e.g. ``narrow``, ``wide + nudge p=0.5, slip`` or ``wide + drop anywhere``."""
        d = self.disturbances
        kinds = [k if d.probabilities[k] == 1.0 else f"{k} p={d.probabilities[k]:g}" for k in d.kinds] if d else []
        drop = [] if self.drop_spot == DEFAULT_DROP_SPOT else [f"drop {self.drop_spot}"]
        return " + ".join([self.start_spread, *drop, *([", ".join(kinds)] if kinds else [])])

    def make_env(self, task: str, **kwargs: Any) -> gym.Env:
        """``make_env(task, **kwargs)`` under these conditions; ValueError for an external
        task under anything but the defaults."""
        from .external import is_external_task
        from .registry import TASK_NAMES, make_env

        if not self.is_default and is_external_task(task):
            raise ValueError(f"start_spread, drop_spot and disturbances are for our tabletop tasks ({', '.join(TASK_NAMES)}); "
                             f"external task {task!r} runs its benchmark's own resets: leave start_spread at "
                             f"{DEFAULT_START_SPREAD!r} ({', '.join(START_SPREADS)}), drop_spot at {DEFAULT_DROP_SPOT!r} "
                             f"and disturbances empty")
        if self.drop_spot != DEFAULT_DROP_SPOT:
            kwargs["drop_spot"] = self.drop_spot
        env = make_env(task, **kwargs)
        if self.start_spread != DEFAULT_START_SPREAD:
            env = StartSpreadWrapper(env, self.start_spread)
        if self.disturbances and self.disturbances.kinds:
            env = DisturbanceWrapper(env, self.disturbances)
        return env


DEFAULT_CONDITIONS = EnvConditions()
