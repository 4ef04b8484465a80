"""Adapters that present external benchmarks (PushT, Meta-World, ALOHA) with robot-learn conventions.

Names: ``pusht``, ``metaworld/<task>`` (Meta-World v3, e.g. ``metaworld/peg-unplug-side``),
``aloha/insertion``, ``aloha/transfer-cube``. ``robot_learn.envs.make_env`` /
``make_expert`` accept them too. The packages come with the ``bench`` extra
(``make .venv-bench/.installed``); without them a clear install hint is raised.
"""

from .registry import (
    DEFAULT_MAX_STEPS,
    EXTERNAL_NAMES,
    INSTALL_HINT,
    MissingExtraError,
    check_external_task,
    external_env_class,
    is_external_task,
    make_external_env,
    make_external_expert,
    metaworld_task_names,
)

__all__ = [
    "DEFAULT_MAX_STEPS",
    "EXTERNAL_NAMES",
    "INSTALL_HINT",
    "MissingExtraError",
    "check_external_task",
    "external_env_class",
    "is_external_task",
    "make_external_env",
    "make_external_expert",
    "metaworld_task_names",
]
