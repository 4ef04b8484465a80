"""Fitting policy presets to external tasks (``envs/external``), whose sizes differ from ours."""

from __future__ import annotations

import dataclasses
from typing import Any


def external_env_facts(task: str) -> tuple[int, dict[str, tuple[int, ...]], tuple[str, ...]] | None:
    """(action dim, observation shapes, camera names) of an external task; None for ours."""
    from robot_learn.envs import make_env
    from robot_learn.envs.external import is_external_task
    from robot_learn.evaluation.rollout import observation_shapes

    if not is_external_task(task):
        return None
    env = make_env(task, cameras=())
    try:
        return int(env.action_space.shape[0]), observation_shapes(env.observation_space), env.camera_names
    finally:
        env.close()


def fit_policy_to_task(config: Any, task: str) -> Any:
    """A policy config with the action and low-dim state sizes of external ``task``
    (the presets are sized for our tasks); ours are returned unchanged. ValueError when
    the policy reads a key the task does not provide."""
    facts = external_env_facts(task)
    if facts is None:
        return config
    action_dim, shapes, _ = facts
    missing = [k for k in config.state_dims if k not in shapes]
    if missing:
        raise ValueError(f"the policy reads {missing} but task '{task}' provides only {sorted(shapes)}")
    return dataclasses.replace(config, action_dim=action_dim,
                               state_dims={k: int(shapes[k][0]) for k in config.state_dims})


def video_cameras(task: str) -> dict[str, tuple[str, ...]]:
    """``evaluate`` keyword for an external task's cameras (empty for ours: the default)."""
    facts = external_env_facts(task)
    return {} if facts is None else {"video_cameras": facts[2]}
