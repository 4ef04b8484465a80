"""External task names, their install hints and the factories.

Names: ``pusht``; ``metaworld/<task>`` for every Meta-World v3 task (e.g.
``metaworld/peg-unplug-side``); ``aloha/insertion`` and ``aloha/transfer-cube``.
The benchmark packages come with the ``bench`` extra and are imported only when
a task of theirs is made, so a missing one gives an install hint, not a traceback.
"""

from __future__ import annotations

import difflib
import importlib
import sys
from types import ModuleType
from typing import Any, Sequence

INSTALL_HINT = ("run it in .venv-bench (.venv-bench/bin/robot-learn or .venv-bench/bin/python), which "
                "make .venv-bench/.installed builds with the 'bench' extra; or pip install -e '.[bench]' "
                "in a venv whose mujoco may be downgraded to 3.3 (metaworld pins it)")
ALOHA_TASKS = {"insertion": "insertion", "transfer-cube": "transfer_cube"}
# Our easy reverses of Meta-World tasks, in the forward task's scene (metaworld_reverse.py):
# reverse -> forward, both without the "metaworld/" prefix.
METAWORLD_REVERSE = {"peg-insert-side-reverse": "peg-insert-side"}
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
        raise MissingExtraError(f"task {task!r} needs the {package} package, which the Python at {sys.prefix} "
                                f"lacks ({err}); {INSTALL_HINT}") from None


def is_external_task(name: str) -> bool:
    """Whether ``name`` is in an external suite's namespace (it may still be unknown there)."""
    return name == "pusht" or name.startswith(("metaworld/", "aloha/"))


def metaworld_task_names() -> tuple[str, ...]:
    """Every Meta-World v3 task, without the ``-v3`` suffix (needs metaworld)."""
    env_dict = require("metaworld.env_dict", "metaworld", "metaworld/<task>")
    return tuple(k.removesuffix("-v3") for k in env_dict.ALL_V3_ENVIRONMENTS)


def unknown_name_error(what: str, name: str, valid: Sequence[str], prefix: str = "") -> ValueError:
    """``unknown <what> 'name'; close matches: ...; valid (N): ...`` on one line. ``valid``
    are bare names, written with ``prefix``; the close matches (difflib's ratio over the
    bare names) come first, so a typo's fix is read before the list."""
    close = difflib.get_close_matches(name.removeprefix(prefix), valid, n=4, cutoff=0.6)
    hint = f"close matches: {', '.join(prefix + c for c in close)}; " if close else ""
    return ValueError(f"unknown {what} {name!r}; {hint}valid ({len(valid)}): "
                      f"{', '.join(prefix + v for v in valid)}")


def check_external_task(name: str) -> str:
    """Return ``name`` if it is a known external task.

    ValueError names the close matches and lists the valid names; MissingExtraError
    if its package is missing.
    """
    suite, _, task = name.partition("/")
    if name == "pusht":
        require("gym_pusht", "gym-pusht", name)
    elif suite == "aloha":
        if task not in ALOHA_TASKS:
            raise unknown_name_error("ALOHA task", name, list(ALOHA_TASKS), prefix="aloha/")
        require("gym_aloha", "gym-aloha", name)
    elif suite == "metaworld":
        require("metaworld", "metaworld", name)
        valid = (*metaworld_task_names(), *METAWORLD_REVERSE)
        if task not in valid:
            raise unknown_name_error("Meta-World task", name, valid, prefix="metaworld/")
    else:
        raise ValueError(f"unknown external task {name!r}; valid: {', '.join(EXTERNAL_NAMES)}")
    return name


def external_env_class(name: str) -> type:
    """The adapter class of external task ``name`` (importing no benchmark package)."""
    suite = name.partition("/")[0]
    if name == "pusht":
        from .pusht import PushTEnv
        return PushTEnv
    if suite == "aloha":
        from .aloha import AlohaEnv
        return AlohaEnv
    if name.partition("/")[2] in METAWORLD_REVERSE:
        from .metaworld_reverse import PegInsertReverseEnv
        return PegInsertReverseEnv
    from .metaworld_tasks import MetaWorldEnv
    return MetaWorldEnv


def make_external_env(name: str, cameras: tuple[str, ...] = (), image_size: int | tuple[int, int] = 96,
                      max_steps: int | None = None, render_mode: str | None = None) -> Any:
    """The adapter env of external task ``name`` (``max_steps=None``: 300)."""
    check_external_task(name)
    kwargs = dict(cameras=tuple(cameras), image_size=image_size, render_mode=render_mode,
                  max_steps=DEFAULT_MAX_STEPS if max_steps is None else int(max_steps))
    suite, _, task = name.partition("/")
    env_class = external_env_class(name)
    if name == "pusht":
        return env_class(**kwargs)
    if suite == "aloha":
        return env_class(ALOHA_TASKS[task], name=name, **kwargs)
    if task in METAWORLD_REVERSE:
        return env_class(**kwargs)
    return env_class(task, **kwargs)


def make_external_expert(name: str, noise: float = 0.0, seed: int | None = None) -> Any:
    """Scripted expert of external task ``name``: Meta-World's own policies (our unplugger for
    ``peg-insert-side-reverse``), our PushT pusher, our ALOHA planner (aloha_expert.py)."""
    check_external_task(name)
    suite, _, task = name.partition("/")
    if name == "pusht":
        from .pusht_expert import PushTExpert
        return PushTExpert(noise=noise, seed=seed)
    if task in METAWORLD_REVERSE:
        from .metaworld_reverse import PegUnplugExpert
        return PegUnplugExpert(noise=noise, seed=seed)
    if suite == "metaworld":
        from .metaworld_tasks import MetaWorldExpert
        return MetaWorldExpert(task, noise=noise, seed=seed)
    from .aloha_expert import AlohaExpert
    return AlohaExpert(ALOHA_TASKS[task], noise=noise, seed=seed)
