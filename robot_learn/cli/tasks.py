"""Validating task names from configs against the registered tasks, task configs for
external tasks that have no YAML, and fitting policy presets to external tasks
(:mod:`robot_learn.evaluation.task_fit`), with one-line errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from robot_learn.cli.errors import CLIError
from robot_learn.evaluation.task_fit import video_cameras  # noqa: F401  (the CLI's import path)


def check_task(name: str) -> str:
    """Return ``name`` if it is a registered or external task; CLIError listing valid
    tasks (or saying how to install an external task's package) otherwise."""
    from robot_learn.envs.registry import check_task_name

    try:
        return check_task_name(name)
    except (ValueError, ImportError) as err:
        raise CLIError(str(err)) from None


def fit_policy_to_task(config: Any, task: str) -> Any:
    """:func:`robot_learn.evaluation.task_fit.fit_policy_to_task`, its ValueError a CLIError."""
    from robot_learn.evaluation.task_fit import fit_policy_to_task as fit

    try:
        return fit(config, task)
    except ValueError as err:
        raise CLIError(str(err)) from None


# What an external task's config holds when it has no YAML in configs/task/: the same
# keys as our tasks' YAMLs; max_steps and the cameras come from the adapter.
EXTERNAL_TASK_DEFAULTS = {"image_size": 96, "demos": 100, "demo_noise": 0.0}


def external_task_config(name: str) -> dict[str, Any]:
    """The task config of external task ``name`` (checked: CLIError when unknown or when
    its benchmark package is missing)."""
    from robot_learn.envs.external import DEFAULT_MAX_STEPS, external_env_class

    check_task(name)
    return {"name": name, "max_steps": DEFAULT_MAX_STEPS,
            "cameras": list(external_env_class(name).camera_names), **EXTERNAL_TASK_DEFAULTS}


def register_external_task_configs(argv: Sequence[str], config_dir: str | Path) -> list[str]:
    """Give Hydra a config for each external task chosen with ``task=...`` in ``argv``
    (a comma list for ``-m`` sweeps too) that has no YAML under ``config_dir/task``, so
    that any Meta-World v3 task runs by name (``task=metaworld/drawer-close``).

    The names are checked first: an unknown one, or one whose package is not installed
    in this venv, is a one-line CLIError before Hydra starts. Returns the names registered.
    """
    from hydra.core.config_store import ConfigStore
    from robot_learn.envs.external import is_external_task

    registered = []
    for arg in argv:
        key, sep, value = arg.partition("=")
        if not sep or key.lstrip("+") != "task" or "(" in value:  # sweep functions are Hydra's
            continue
        for name in (v.strip() for v in value.split(",")):
            if not is_external_task(name):
                continue
            config = external_task_config(name)  # checked even with a YAML: before Hydra writes a run dir
            if not (Path(config_dir) / "task" / f"{name}.yaml").is_file():
                group, _, option = f"task/{name}".rpartition("/")
                ConfigStore.instance().store(group=group, name=option, node=config)
                registered.append(name)
    return registered
