"""Validating task names from configs against the registered tasks, and fitting policy
presets to external tasks (:mod:`robot_learn.evaluation.task_fit`) with one-line errors."""

from __future__ import annotations

from typing import Any

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
