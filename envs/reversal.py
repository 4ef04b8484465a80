"""Time reversal: turn a reverse-task (easy) episode into forward-task actions.

Pose actions are absolute, so an episode can be played backwards: the arm
visits the recorded end-effector poses in reverse order and the gripper
commands run backwards (a release becomes a grasp).  The forward env starts
from the reverse episode's *final* scene (both variants of a family share one
scene, so ``set_state`` loads it) and its own success test judges the result.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .base_env import TabletopEnv
from .demos import run_expert
from .registry import make_env, make_expert, task_spec


def reverse_episode(ee_poses: np.ndarray, gripper: np.ndarray) -> np.ndarray:
    """Forward-task pose actions from a reverse-task episode.

    Args:
        ee_poses: [N, 4] recorded end-effector x, y, z, yaw (``obs["state"][6:10]``),
            ideally N = T + 1 (every observation including the final one).
        gripper: [T] gripper commands that were executed (``action[:, 4]``).

    Returns:
        [n, 5] float32 with n = min(N - 1, T): with rp/rg the reversed
        sequences, ``action[t, :4] = rp[t + 1]`` and ``action[t, 4] = rg[t]``.
    """
    poses = np.asarray(ee_poses, dtype=np.float64)
    grip = np.asarray(gripper, dtype=np.float64).reshape(-1)
    if poses.ndim != 2 or poses.shape[1] != 4:
        raise ValueError(f"ee_poses must have shape [N, 4], got {poses.shape}")
    if len(poses) < 2 or len(grip) < 1:
        raise ValueError(f"need at least 2 poses and 1 gripper command, got {len(poses)} and {len(grip)}")
    rp, rg = poses[::-1], grip[::-1]
    n = min(len(rp) - 1, len(rg))
    actions = np.empty((n, 5), dtype=np.float32)
    actions[:, :4] = rp[1 : n + 1]
    actions[:, 4] = rg[:n]
    return actions


@dataclass
class RecordedEpisode:
    """What ``record_expert_episode`` keeps: enough to reverse and replay."""

    task: str
    seed: int
    ee_poses: np.ndarray  # [T + 1, 4]
    actions: np.ndarray  # [T, 5]
    success: bool
    final_state: np.ndarray
    infos: list[dict[str, Any]] = field(default_factory=list)


def record_expert_episode(task: str, seed: int, noise: float = 0.0, env: TabletopEnv | None = None) -> RecordedEpisode:
    """Run the scripted expert of ``task`` for one episode (no cameras), recorded as demos are."""
    from robot_learn.data import EpisodeRecorder

    env = env if env is not None else make_env(task, cameras=())
    recorder = EpisodeRecorder(("state",))
    final_obs, infos = run_expert(env, make_expert(task, noise=noise, seed=seed), seed, recorder)
    steps = recorder.steps()
    poses = np.concatenate([steps["state"][:, 6:10], final_obs["state"][None, 6:10]])
    return RecordedEpisode(task, seed, poses, steps["action"], bool(infos[-1]["success"]),
                           env.unwrapped.get_state(), infos)


def replay_reversed(episode: RecordedEpisode, env: TabletopEnv | None = None) -> dict[str, Any]:
    """Replay a reverse-task episode backwards in its forward partner task.

    Returns ``{"success", "steps", "actions", "observations", "infos"}``; the
    forward env runs until its success test passes or the actions run out.
    """
    spec = task_spec(episode.task)
    if spec.variant != "reverse":
        raise ValueError(f"task {episode.task!r} is a forward task; reversal needs a reverse task")
    env = env if env is not None else make_env(spec.partner, cameras=())
    actions = reverse_episode(episode.ee_poses, episode.actions[:, 4])
    obs = env.unwrapped.reset_to_state(episode.final_state)
    observations, infos, success = [obs], [], False
    for action in actions:
        obs, _, terminated, _, info = env.step(action)
        observations.append(obs)
        infos.append(info)
        if terminated:
            success = True
            break
    return {"success": success, "steps": len(infos), "actions": actions[: len(infos)],
            "observations": observations, "infos": infos}
