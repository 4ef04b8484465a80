"""Videos of imagined rollouts beside their real counterparts in the simulator.

An imagined rollout starts from the first ``history`` frames of a stored episode. It
has a real counterpart when that episode records its seed and the task's simulator,
reset with that seed and driven by the episode's own first ``history - 1`` actions,
shows the stored start frame again (mean absolute difference at most
``MATCH_TOLERANCE`` grey levels). The same policy, with the same sampling seed, then
runs in the simulator for as many steps as the imagined rollout, and the two videos
are written side by side: the simulator left, the imagination right. Without a real
counterpart (another start spread, another renderer) the imagined video is
written alone, and the file's name says which it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch

from robot_learn.evaluation.videos import tile_cameras, write_video

MATCH_TOLERANCE = 2.0  # grey levels, mean over the start frame's pixels


@dataclass
class RolloutVideo:
    """One written video: its path and, with a real counterpart, the simulator's outcome."""

    path: Path
    seed: int
    start_episode: int
    imagined_success: bool
    sim_success: bool | None = None  # None: no real counterpart

    def describe(self) -> str:
        real = "no real counterpart" if self.sim_success is None else f"sim {'success' if self.sim_success else 'failure'}"
        return (f"rollout seed {self.seed} (start episode {self.start_episode}): imagined "
                f"{'success' if self.imagined_success else 'failure'}, {real} -> {self.path}")


def simulator_start(task: str, store: Any, episode: int, camera: str, image_size: int,
                    history: int) -> tuple[Any, dict] | None:
    """The task's simulator brought to where an imagined rollout from stored ``episode``
    starts, as ``(env, obs)``; None when the simulator, reset with the episode's seed,
    does not reproduce its start frame (the env is closed then)."""
    from robot_learn.envs import make_env

    seed = int(store.meta["seed"][episode])  # a required field of every stored episode
    a, end = int(store.episode_starts[episode]), int(store.episode_ends[episode])
    start = min(a + history - 1, end - 1)  # the stored step the imagination starts at
    env = make_env(task, cameras=(camera,), image_size=image_size)
    matched = False
    try:
        obs, _ = env.reset(seed=seed)
        for action in np.asarray(store.array("action")[a:start], np.float32):
            obs, *_ = env.step(action)
        stored = np.asarray(store.array(f"images/{camera}")[start], np.float32)
        matched = float(np.abs(obs["images"][camera].astype(np.float32) - stored).mean()) <= MATCH_TOLERANCE
    finally:
        if not matched:
            env.close()
    return (env, obs) if matched else None


def run_in_simulator(policy: Any, env: Any, obs: dict, steps: int, seed: int, camera: str,
                     policy_obs: Callable[[dict], dict]) -> tuple[list[np.ndarray], bool]:
    """``policy`` for up to ``steps`` steps from ``obs`` in ``env`` (sampling seeded with
    ``seed``, as the imagined rollout's); the camera's frames (the start frame first)
    and whether the task succeeded."""
    generator = torch.Generator(device=policy.device).manual_seed(seed)
    policy.reset()
    frames, success = [obs["images"][camera]], False
    for _ in range(steps):
        action = policy.select_action(policy_obs(obs), generator=generator)[0].cpu().numpy()
        action = np.clip(action.astype(np.float32), env.action_space.low, env.action_space.high)
        obs, _, terminated, truncated, info = env.step(action)
        frames.append(obs["images"][camera])
        success = success or bool(info.get("success", False))
        if terminated or truncated:
            break
    return frames, success


def write_rollout_video(out_dir: str | Path, seed: int, start_episode: int, imagined: Sequence[np.ndarray],
                        imagined_success: bool, real: tuple[list[np.ndarray], bool] | None) -> RolloutVideo:
    """Write ``imagined`` frames (beside ``real``'s, when given; the shorter video holds
    its last frame) to ``out_dir/rollout_<seed>_{sim_vs_imagined|imagined}.mp4``."""
    out_dir = Path(out_dir)
    if real is None:
        path = write_video(list(imagined), out_dir / f"rollout_{seed:06d}_imagined.mp4")
        return RolloutVideo(path, seed, start_episode, imagined_success)
    sim_frames, sim_success = real
    n = max(len(sim_frames), len(imagined))
    frames = [tile_cameras({"sim": sim_frames[min(t, len(sim_frames) - 1)],
                            "imagined": imagined[min(t, len(imagined) - 1)]}) for t in range(n)]
    path = write_video(frames, out_dir / f"rollout_{seed:06d}_sim_vs_imagined.mp4")
    return RolloutVideo(path, seed, start_episode, imagined_success, sim_success)
