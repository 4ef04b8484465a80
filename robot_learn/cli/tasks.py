"""Validating task names from configs against the registered tasks."""

from __future__ import annotations

from robot_learn.cli.hydra_app import CLIError


def check_task(name: str) -> str:
    """Return ``name`` if it is a registered task; CLIError listing valid tasks otherwise."""
    from robot_learn.envs import TASK_NAMES

    if name not in TASK_NAMES:
        raise CLIError(f"unknown task '{name}'; valid tasks: {', '.join(TASK_NAMES)}")
    return name
