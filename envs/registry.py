"""Task names, specs, gymnasium registration and the ``make_*`` factories."""

from __future__ import annotations

from dataclasses import dataclass

import gymnasium as gym

from .base_env import TabletopEnv
from .experts import PickPlaceExpert
from .external import EXTERNAL_NAMES, check_external_task, is_external_task, make_external_env, make_external_expert
from .task_base import DEFAULT_DROP_SPOT, FamilyTask
from .task_bin import BinEitherTask, BinTask
from .task_peg import PegTask
from .task_stack import StackTask


@dataclass(frozen=True)
class TaskSpec:
    """Static facts about a task.

    ``partner`` is the other variant of the same family: time-reversed
    episodes of a reverse task become demos of its forward partner.
    """

    name: str
    family: str
    variant: str  # "forward" (hard) or "reverse" (easy)
    partner: str
    gym_id: str
    max_steps: int
    description: str


_FAMILY_CLASSES: dict[str, type[FamilyTask]] = {"stack": StackTask, "peg": PegTask, "bin": BinTask}
_TASK_CLASSES: dict[str, type[FamilyTask]] = {"bin_either": BinEitherTask}  # tasks not their family's class

# The zero-noise expert needs ~45-60 steps; max_steps leaves room for noisy
# experts that hesitate, overshoot or re-grasp.
_SPECS = (
    TaskSpec("stack", "stack", "forward", "unstack", "robot_learn/StackCube-v0", 100,
             "put one cube on another; the instruction says which on which"),
    TaskSpec("unstack", "stack", "reverse", "stack", "robot_learn/UnstackCube-v0", 100,
             "take the top cube off and put it on the table"),
    TaskSpec("peg_insert", "peg", "forward", "peg_remove", "robot_learn/PegInsert-v0", 120,
             "insert a peg into the hole of a block (6 mm clearance)"),
    TaskSpec("peg_remove", "peg", "reverse", "peg_insert", "robot_learn/PegRemove-v0", 120,
             "pull the peg out of the block and stand it on the table"),
    TaskSpec("bin_place", "bin", "forward", "bin_take", "robot_learn/BinPlace-v0", 100,
             "put a cube into a bin, next to a distractor cube"),
    TaskSpec("bin_take", "bin", "reverse", "bin_place", "robot_learn/BinTake-v0", 100,
             "take the cube out of the bin and put it on the table"),
)
# Tasks outside the paired suite: ``bin_either`` has two valid modes (either of two identical
# cubes goes into the bin), for steering. Its partner is its family's reverse task.
_MODE_SPECS = (
    TaskSpec("bin_either", "bin", "forward", "bin_take", "robot_learn/BinEither-v0", 100,
             "put either of two identical cubes into a bin (two valid modes)"),
)
TASK_SPECS: dict[str, TaskSpec] = {s.name: s for s in _SPECS + _MODE_SPECS}
# The suite: three families, each a forward and a reverse task (multi-task training and benchmarks).
TASK_NAMES: tuple[str, ...] = tuple(s.name for s in _SPECS)
ALL_TASK_NAMES: tuple[str, ...] = tuple(TASK_SPECS)


def task_spec(name: str) -> TaskSpec:
    """The ``TaskSpec`` of a task; ValueError lists the valid names."""
    if name not in TASK_SPECS:
        raise ValueError(f"unknown task {name!r}; valid tasks: {', '.join(ALL_TASK_NAMES)}; "
                         f"external (extra 'bench'): {', '.join(EXTERNAL_NAMES)}")
    return TASK_SPECS[name]


def check_task_name(name: str) -> str:
    """Return ``name`` if it is one of our tasks or a known external one (``envs/external``).

    ValueError lists the valid names; MissingExtraError (an ImportError) says how
    to install an external task's package.
    """
    return check_external_task(name) if is_external_task(name) else task_spec(name).name


def make_env(
    name: str,
    cameras: tuple[str, ...] = ("front", "wrist"),
    image_size: int | tuple[int, int] = 96,
    action_mode: str = "pose",
    max_steps: int | None = None,
    render_mode: str | None = None,
    drop_spot: str = DEFAULT_DROP_SPOT,
) -> TabletopEnv:
    """Build the env of task ``name`` (no wrappers; ``max_steps=None`` uses the spec's).

    External tasks (``pusht``, ``metaworld/<task>``, ``aloha/<task>``) get their
    adapter; they take their benchmark's own actions, so only ``action_mode="pose"``
    (the default) is accepted for them. ``drop_spot`` (reverse tasks): where their white
    square lies, ``beside`` the target or ``anywhere`` (``DROP_SPOTS`` of :mod:`.task_base`).
    """
    if is_external_task(name):
        if drop_spot != DEFAULT_DROP_SPOT:
            raise ValueError(f"drop_spot is for our reverse tasks; external task {name!r} has none")
        if action_mode != "pose":
            raise ValueError(f"external task {name!r} takes its benchmark's own actions; leave action_mode "
                             f"at its default")
        return make_external_env(name, cameras=tuple(cameras), image_size=image_size, max_steps=max_steps,
                                 render_mode=render_mode)
    spec = task_spec(name)
    return TabletopEnv(
        name,
        family_task(name),
        max_steps=spec.max_steps if max_steps is None else max_steps,
        cameras=tuple(cameras),
        image_size=image_size,
        action_mode=action_mode,
        render_mode=render_mode,
        drop_spot=drop_spot,
    )


def family_task(name: str) -> FamilyTask:
    """The ``FamilyTask`` (templates, goals, success test) of one of our tasks."""
    spec = task_spec(name)
    return _TASK_CLASSES.get(name, _FAMILY_CLASSES[spec.family])(forward=spec.variant == "forward")


def make_expert(name: str, noise: float = 0.0, seed: int | None = None) -> PickPlaceExpert:
    """Scripted expert of task ``name`` producing pose-mode actions (external: their own actions)."""
    if is_external_task(name):
        return make_external_expert(name, noise=noise, seed=seed)
    task_spec(name)
    return PickPlaceExpert(name, noise=noise, seed=seed)


def register_envs() -> None:
    """Register every task under its gymnasium id (idempotent)."""
    for spec in TASK_SPECS.values():
        if spec.gym_id not in gym.registry:
            # The passive checker rejects the empty images Dict of camera-less
            # envs (the contract's ``images == {}``); tests run the full
            # gymnasium check_env on envs with cameras instead.
            gym.register(id=spec.gym_id, entry_point="robot_learn.envs.registry:make_env",
                         kwargs={"name": spec.name}, disable_env_checker=True)
