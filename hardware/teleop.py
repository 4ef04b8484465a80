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
    states, actions, images = [], [], {}

    def step(_: int) -> bool:
        obs, command, _sent = teleop_step(leader, follower)
        states.append(joints_to_array(obs, follower.joint_names))
        actions.append(joints_to_array(command, follower.joint_names))
        for cam, frame in obs["images"].items():
            images.setdefault(cam, []).append(frame)
        return not (should_stop is not None and should_stop())

    stats = RateLoop(rate_hz).run(step, iterations=iterations, duration_s=duration_s)
    t = len(states)
    steps: dict[str, np.ndarray] = {
        "state": np.asarray(states, dtype=np.float32).reshape(t, -1),
        "action": np.asarray(actions, dtype=np.float32).reshape(t, -1),
        "policy_action": np.zeros((t, len(follower.joint_names)), dtype=np.float32),
        "intervention": np.ones(t, dtype=bool),
        "reward": np.zeros(t, dtype=np.float32),
        "progress": np.zeros(t, dtype=np.float32),
        "phase": np.zeros(t, dtype=np.int64),
    }
    for cam, frames in images.items():
        steps[f"images/{cam}"] = np.asarray(frames, dtype=np.uint8)
    return TeleopEpisode(steps, stats)


def record_episode(store_path: str | os.PathLike, episode: TeleopEpisode, task: str, instruction: str,
                   success: bool = False, seed: int = 0, operator: str = "") -> int:
    """Append a teleop episode (source="teleop") to a store, creating the store if needed."""
    store = (EpisodeStore.open(store_path, mode="a") if os.path.exists(store_path)
             else EpisodeStore.create(store_path))
    return store.append_episode(episode.steps, {
        "task": task, "instruction": instruction, "success": bool(success), "seed": int(seed),
        "source": "teleop", "operator": operator})
