"""Leader -> follower teleoperation and recording teleop episodes into the EpisodeStore."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from robot_learn.data import EpisodeStore
from robot_learn.hardware.arm import ServoArm, joints_to_array
from robot_learn.hardware.control_loop import LoopStats, RateLoop


@dataclass
class TeleopEpisode:
    """Per-step arrays of one teleop episode plus the loop's timing."""

    steps: dict[str, np.ndarray]
    stats: LoopStats


def teleop_step(leader: ServoArm, follower: ServoArm) -> tuple[dict[str, Any], dict[str, float], dict[str, float]]:
    """One teleop tick: observe the follower, read the leader, send it (through the
    follower's safety layer). Returns (follower observation, leader command, sent action)."""
    obs = follower.get_observation()
    command = leader.get_action()
    sent = follower.send_action(command)
    return obs, command, sent


def run_teleop(leader: ServoArm, follower: ServoArm, rate_hz: float = 50.0,
               iterations: int | None = None, duration_s: float | None = None,
               should_stop: Callable[[], bool] | None = None) -> TeleopEpisode:
    """Run teleop at a fixed rate and collect the step arrays the store expects.

    Steps: state = follower joint positions, action = leader command, policy_action
    = zeros, intervention = True, reward/progress/phase = 0, images per camera."""
    from robot_learn.data import EpisodeRecorder

    recorder = EpisodeRecorder(("state",))
    n = len(follower.joint_names)

    def step(_: int) -> bool:
        obs, command, _sent = teleop_step(leader, follower)
        recorder.record({"state": joints_to_array(obs, follower.joint_names), "images": obs["images"]},
                        joints_to_array(command, follower.joint_names), policy_action=np.zeros(n, np.float32),
                        intervention=True)
        return not (should_stop is not None and should_stop())

    stats = RateLoop(rate_hz).run(step, iterations=iterations, duration_s=duration_s)
    return TeleopEpisode(recorder.steps(), stats)


def record_episode(store_path: str | os.PathLike, episode: TeleopEpisode, task: str, instruction: str,
                   success: bool = False, seed: int = 0, operator: str = "") -> int:
    """Append a teleop episode (source="teleop") to a store, creating the store if needed."""
    with EpisodeStore.open_or_create(store_path) as store:
        return store.append_episode(episode.steps, {
            "task": task, "instruction": instruction, "success": bool(success), "seed": int(seed),
            "source": "teleop", "operator": operator})
