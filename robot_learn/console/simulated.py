"""A simulated console session in one call: :func:`simulated_setup` (tests, benchmarks).

The MuJoCo twin of the task, the scripted :class:`StandInPolicy` driving and a
:class:`~robot_learn.loops.operators.SimulatedOperator` as the hands (its expert acts
after a takeover; its takeover rule asks for help). ``robot-learn console`` builds
the same parts from its Hydra config instead.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from robot_learn.console.console_session import SessionSetup
from robot_learn.console.stand_in_policy import StandInPolicy


def simulated_setup(task: str, store_path: str | Path, *, cameras: Sequence[str] = ("front",),
                    image_size: int = 64, rate_hz: float = 10.0, max_steps: int = 100, seed: int = 0,
                    freeze_fraction: float = 0.5, freeze_after: Sequence[int] = (10, 40),
                    stall_steps: int = 20, episodes: int | None = None) -> SessionSetup:
    """A :class:`SessionSetup` for a simulated session recording to ``store_path``."""
    from robot_learn.data import EpisodeStore
    from robot_learn.envs import SimRobot
    from robot_learn.loops.operators import SimulatedOperator, TakeoverRule

    hands = SimulatedOperator(task, rule=TakeoverRule(stall_steps=stall_steps), rate_hz=rate_hz, seed=seed,
                              operator_id="console")
    return SessionSetup(
        make_robot=lambda: SimRobot(task, cameras=tuple(cameras), image_size=image_size, max_steps=max_steps),
        make_policy=lambda robot: StandInPolicy(robot, task, freeze_fraction, freeze_after, seed=seed),
        hands=hands, store=EpisodeStore.open_or_create(store_path), task=task, rate_hz=rate_hz,
        max_steps=max_steps, seed=seed, policy_id="stand-in", episodes=episodes,
        camera=cameras[0] if cameras else None)
