"""MuJoCo tabletop tasks for the SO-101-like arm (see docs/interfaces.md, "Tasks").

Importing this package registers the gymnasium ids ``robot_learn/*-v0``.
"""

import os

# Headless machines render through EGL; must be decided before mujoco loads.
if not os.environ.get("DISPLAY"):
    os.environ.setdefault("MUJOCO_GL", "egl")
    if os.environ["MUJOCO_GL"] in ("egl", "osmesa"):
        os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])

from .base_env import TabletopEnv  # noqa: E402
from .experts import PickPlaceExpert  # noqa: E402
from .registry import TASK_NAMES, TASK_SPECS, TaskSpec, make_env, make_expert, register_envs, task_spec  # noqa: E402
from .reversal import (  # noqa: E402
    RecordedEpisode, easy_task_of, forward_task_of, record_expert_episode, replay_reversed, reverse_episode, reverse_into,
    reverse_pairs, reverse_recorded, reverse_steps,
)
from .sim_robot import SimRobot, SimRobotError, make_sim_robot  # noqa: E402
from .task_base import PHASES  # noqa: E402

register_envs()

__all__ = [
    "PHASES",
    "TASK_NAMES",
    "TASK_SPECS",
    "PickPlaceExpert",
    "RecordedEpisode",
    "SimRobot",
    "SimRobotError",
    "TabletopEnv",
    "TaskSpec",
    "easy_task_of",
    "forward_task_of",
    "make_env",
    "make_expert",
    "make_sim_robot",
    "record_expert_episode",
    "replay_reversed",
    "reverse_episode",
    "reverse_into",
    "reverse_pairs",
    "reverse_recorded",
    "reverse_steps",
    "task_spec",
]
