"""External task names, their install hints and the factories.

Names: ``pusht``; ``metaworld/<task>`` for every Meta-World v3 task (e.g.
``metaworld/peg-unplug-side``); ``aloha/insertion`` and ``aloha/transfer-cube``.
The benchmark packages come with the ``bench`` extra and are imported only when
a task of theirs is made, so a missing one gives an install hint, not a traceback.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

INSTALL_HINT = ("install the 'bench' extra: make .venv-bench/.installed (then use .venv-bench/bin/python "
                "or .venv-bench/bin/robot-learn), or pip install -e '.[bench]' in a venv whose mujoco may "
                "be downgraded to 3.3 (metaworld pins it)")
ALOHA_TASKS = {"insertion": "insertion", "transfer-cube": "transfer_cube"}
# How each name is written in error messages.
EXTERNAL_NAMES = ("pusht", "metaworld/<task>", *(f"aloha/{t}" for t in ALOHA_TASKS))
DEFAULT_MAX_STEPS = 300


class MissingExtraError(ImportError):
    """An external task's benchmark package is not installed."""


def require(module: str, package: str, task: str) -> ModuleType:
    """Import ``module`` or raise MissingExtraError naming ``package`` and how to install it."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise MissingExtraError(f"task {task!r} needs the {package} package ({err}); {INSTALL_HINT}") from None


def is_external_task(name: str) -> bool:
    """Whether ``name`` is in an external suite's namespace (it may still be unknown there)."""
    return name == "pusht" or name.startswith(("metaworld/", "aloha/"))


def metaworld_task_names() -> tuple[str, ...]:
    """Every Meta-World v3 task, without the ``-v3`` suffix (needs metaworld)."""
    env_dict = require("metaworld.env_dict", "metaworld", "metaworld/<task>")
    return tuple(k.removesuffix("-v3") for k in env_dict.ALL_V3_ENVIRONMENTS)


def check_external_task(name: str) -> str:
    """Return ``name`` if it is a known external task.

    ValueError lists the valid names; MissingExtraError if its package is missing.
    """
    suite, _, task = name.partition("/")
    if name == "pusht":
        require("gym_pusht", "gym-pusht", name)
    elif suite == "aloha":
        if task not in ALOHA_TASKS:
            raise ValueError(f"unknown ALOHA task {name!r}; valid: {', '.join(f'aloha/{t}' for t in ALOHA_TASKS)}")
        require("gym_aloha", "gym-aloha", name)
    elif suite == "metaworld":
        require("metaworld", "metaworld", name)
        valid = metaworld_task_names()
        if task not in valid:
            raise ValueError(f"unknown Meta-World task {name!r}; valid: "
                             f"{', '.join(f'metaworld/{t}' for t in valid)}")
    else:
        raise ValueError(f"unknown external task {name!r}; valid: {', '.join(EXTERNAL_NAMES)}")
    return name


def make_external_env(name: str, cameras: tuple[str, ...] = (), image_size: int | tuple[int, int] = 96,
                      max_steps: int | None = None, render_mode: str | None = None) -> Any:
    """The adapter env of external task ``name`` (``max_steps=None``: 300)."""
    check_external_task(name)
    kwargs = dict(cameras=tuple(cameras), image_size=image_size, render_mode=render_mode,
                  max_steps=DEFAULT_MAX_STEPS if max_steps is None else int(max_steps))
    suite, _, task = name.partition("/")
    if name == "pusht":
        from .pusht import PushTEnv
        return PushTEnv(**kwargs)
    if suite == "aloha":
        from .aloha import AlohaEnv
        return AlohaEnv(ALOHA_TASKS[task], name=name, **kwargs)
    from .metaworld_tasks import MetaWorldEnv
    return MetaWorldEnv(task, **kwargs)


def make_external_expert(name: str, noise: float = 0.0, seed: int | None = None) -> Any:
    """Scripted expert of external task ``name``: Meta-World's own policies, our PushT pusher.

    ValueError for ALOHA (gym-aloha ships no scripted policy).
    """
    check_external_task(name)
    suite, _, task = name.partition("/")
    if name == "pusht":
        from .pusht_expert import PushTExpert
        return PushTExpert(noise=noise, seed=seed)
    if suite == "metaworld":
        from .metaworld_tasks import MetaWorldExpert
        return MetaWorldExpert(task, noise=noise, seed=seed)
    raise ValueError(f"task {name!r} has no scripted expert (gym-aloha ships none); "
                     f"experts exist for pusht and metaworld/<task>")
