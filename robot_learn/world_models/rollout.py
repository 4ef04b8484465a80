"""Policies rolled out inside a world model: evaluation and synthetic episodes.

:class:`WorldModelEnvFactory` stands where the evaluation code takes env conditions
(``evaluate(..., conditions=factory)``), so any policy is scored in imagination by
the same code that scores it in MuJoCo. :func:`generate_rollouts` records imagined
episodes into a store tagged ``source=synthetic``; a rollout stopped by a NaN or
out-of-range frame is reported and not written.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

import gymnasium as gym
import numpy as np
import torch

from robot_learn.data import EpisodeRecorder, EpisodeStore
from robot_learn.data.views import EpisodeView
from robot_learn.policies import check_compatible
from robot_learn.world_models.checkpoint import load_world_model
from robot_learn.world_models.env import WorldModelEnv
from robot_learn.world_models.modeling_world_model import VideoWorldModel
from robot_learn.world_models.scorer import NearestFrameScorer, RolloutScorer
from robot_learn.world_models.success_model import load_success_model
from robot_learn.world_models.side_by_side import RolloutVideo, run_in_simulator, simulator_start, write_rollout_video


def task_spaces(task: str) -> tuple[gym.spaces.Box, gym.spaces.Text]:
    """The MuJoCo task's action space and instruction space (a camera-less env is built to read them)."""
    from robot_learn.envs import make_env

    env = make_env(task, cameras=())
    try:
        return env.action_space, env.observation_space["instruction"]
    finally:
        env.close()


def check_policy_fits(policy: Any, model: VideoWorldModel, action_dim: int) -> None:
    """ValueError naming both sides unless the policy reads what the model imagines
    (some of its cameras at its image size, ``state``) and acts in the model's action space."""
    from robot_learn.evaluation.rollout import policy_cameras

    cams, size = policy_cameras(policy)
    check_cameras_fit(cams, size, model)
    check_compatible(policy, action_dim=action_dim, obs_shapes=model.obs_shapes)


def check_cameras_fit(cameras: Sequence[str], image_size: int, model: VideoWorldModel) -> None:
    """ValueError naming both sides unless every camera a policy reads (at ``image_size``) is imagined."""
    have = model.config.cameras
    if tuple(cameras) and (not set(cameras) <= set(have) or int(image_size) != model.config.image_size):
        raise ValueError(f"policy reads cameras {list(cameras)} at {image_size} px; the world model imagines "
                         f"{list(have)} at {model.config.image_size} px")


@dataclass
class WorldModelEnvFactory:
    """Builds :class:`WorldModelEnv` s for the evaluation code (it duck-types ``EnvConditions``)."""

    checkpoint: str
    store: str
    episodes: Sequence[int] | None = None  # stored episodes to start from; None: all
    is_default: bool = False
    scorer: str | None = None  # see make_scorer: None or "nearest", or a success-model dir
    start: str = "store"  # store: from stored episodes; sim: from fresh MuJoCo resets with the episode seeds

    def describe(self) -> str:
        where = "fresh MuJoCo resets" if self.start == "sim" else self.store
        return f"world model {self.checkpoint} (starts from {where})"

    def make_env(self, task: str, cameras: Sequence[str] = (), image_size: int = 64,
                 max_steps: int | None = None) -> WorldModelEnv:
        model = load_world_model(self.checkpoint, task=task)
        check_cameras_fit(cameras, image_size, model)
        store = EpisodeStore.open(self.store, mode="r")
        view = EpisodeView(store, range(store.num_episodes) if self.episodes is None else self.episodes)
        return WorldModelEnv(model, view, *task_spaces(task), max_steps=max_steps or 100,
                             scorer=make_scorer(self.scorer, view, model), start=self.start)


def rollout_starts(checkpoint: str | Path, starts: str | Path | None, scorer: str,
                   keys: tuple[str, str] = ("store", "scorer")) -> str:
    """The store whose first frames start rollouts of the world model at ``checkpoint``:
    ``starts``, or (None) the store the model was trained on; checks that it exists and that
    ``scorer`` is ``nearest`` or a directory. ValueError naming the caller's setting
    (``keys``: what it calls the starts and the scorer)."""
    from robot_learn.world_models.checkpoint import training_store

    starts_key, scorer_key = keys
    if str(scorer) != "nearest" and not Path(scorer).is_dir():
        raise ValueError(f"{scorer_key} '{scorer}' is neither 'nearest' nor a success-model directory")
    path = starts or training_store(checkpoint)
    if not path:
        raise ValueError(f"world model {checkpoint} is not in a wm train run dir; give {starts_key}=... (its start "
                         "frames)")
    if not Path(path).exists():
        raise ValueError(f"{starts_key} '{path}' does not exist")
    return str(path)


def make_scorer(scorer: str | Path | None, starts: EpisodeView, model: VideoWorldModel) -> RolloutScorer:
    """What labels ``model``'s imagined steps: ``None`` or ``"nearest"`` is the
    :class:`NearestFrameScorer` over ``starts``; anything else is the directory of a
    :class:`~robot_learn.world_models.success_model.SuccessModel`, which must judge the
    world model's camera at its image size (a ValueError names both sides)."""
    if scorer is None or str(scorer) == "nearest":
        return NearestFrameScorer(starts, model.config.camera)
    judge = load_success_model(scorer)
    seen, want = (judge.config.camera, judge.config.image_size), (model.config.camera, model.config.image_size)
    if seen != want:
        raise ValueError(f"success model {scorer} judges '{seen[0]}' frames at {seen[1]} px; the world model "
                         f"imagines '{want[0]}' at {want[1]} px")
    return judge


@contextmanager
def rollout_env(model: VideoWorldModel, starts: str | Path, max_steps: int | None = None,
                scorer: str | Path | None = None, start: str = "store") -> Iterator[WorldModelEnv]:
    """A :class:`WorldModelEnv` of ``model``'s task whose rollouts start from every episode
    of the store at ``starts`` (open while the env is in use; with ``start="sim"`` from fresh
    MuJoCo resets instead, the store then serving the default scorer); ``max_steps`` (None: the
    task's episode limit); ``scorer`` as :func:`make_scorer` takes it."""
    from robot_learn.envs import task_spec

    task = model.config.task
    with EpisodeStore.open(starts, mode="r") as store:
        view = EpisodeView(store, range(store.num_episodes))
        env = WorldModelEnv(model, view, *task_spaces(task), max_steps=max_steps or task_spec(task).max_steps,
                            scorer=make_scorer(scorer, view, model), start=start)
        try:
            yield env
        finally:
            env.close()


@dataclass
class RolloutSummary:
    """What :func:`generate_rollouts` wrote and what it stopped."""

    written: int = 0
    successes: int = 0
    stopped: list[str] = field(default_factory=list)  # one line per rollout stopped by a bad frame
    videos: list[RolloutVideo] = field(default_factory=list)


def _policy_obs(obs: dict[str, Any]) -> dict[str, Any]:
    """One env observation as a batch of 1 for ``select_action``."""
    return {"state": obs["state"][None], "images": {c: f[None] for c, f in obs["images"].items()},
            "instruction": [obs["instruction"]]}


@torch.inference_mode()
def generate_rollouts(policy: Any, env: WorldModelEnv, episodes: int, out: Any, *, seed: int = 0,
                      policy_id: str = "", round_index: int = 0, videos: int = 0,
                      video_dir: str | Path | None = None) -> RolloutSummary:
    """Roll ``policy`` out ``episodes`` times in ``env`` from seeds ``seed, seed+1, ...``;
    append each finished episode with ``source=synthetic`` to ``out``: a store path
    (created if missing, once an episode is to be written) or an open store (anything
    with ``append_episode``, e.g. the fleet's :class:`~robot_learn.fleet.writer.RemoteStore`).
    Each episode depends only on its seed (the env's imagination and the policy's
    sampling are seeded per episode). A rollout that imagines a NaN or out-of-range
    frame is stopped, reported and not written. The first ``videos`` seeds' written
    rollouts go to mp4s in ``video_dir``, beside their real counterparts in the
    simulator where one exists (:mod:`~robot_learn.world_models.side_by_side`)."""
    check_policy_fits(policy, env.model, int(env.action_space.shape[0]))
    summary = RolloutSummary()
    given = out if hasattr(out, "append_episode") else None
    store: Any = given
    generator = torch.Generator(device=policy.device)
    policy.eval()
    try:
        for i in range(episodes):
            obs, info = env.reset(seed=seed + i)
            policy.reset()
            generator.manual_seed(seed + i)
            recorder = EpisodeRecorder(("state",))
            error = None
            filmed = video_dir is not None and i < videos
            frames = [obs["images"][env.camera]] if filmed else []
            while True:
                action = policy.select_action(_policy_obs(obs), generator=generator)[0].cpu().numpy()
                action = np.clip(action.astype(np.float32), env.action_space.low, env.action_space.high)
                next_obs, reward, terminated, truncated, info = env.step(action)
                recorder.record(obs, action, reward=reward, progress=info["progress"], phase=-1)
                obs = next_obs
                if filmed:
                    frames.append(obs["images"][env.camera])
                if "imagination_error" in info:
                    error = info["imagination_error"]
                if terminated or truncated:
                    break
            if error is not None:
                summary.stopped.append(f"rollout seed {seed + i} (start episode {env.start_episode}): {error}")
                continue
            if store is None:
                store = EpisodeStore.open_or_create(out)
            recorder.commit(store, {"task": env.model.config.task, "instruction": obs["instruction"],
                                    "success": bool(info["success"]), "seed": seed + i, "source": "synthetic",
                                    "round": round_index, "policy_id": policy_id})
            summary.written += 1
            summary.successes += bool(info["success"])
            if filmed:
                summary.videos.append(_film(policy, env, frames, bool(info["success"]), seed + i, video_dir))
    finally:
        if store is not None and given is None:
            store.close()
    return summary


def _film(policy: Any, env: WorldModelEnv, frames: list, success: bool, seed: int, video_dir: Any) -> RolloutVideo:
    """Write one imagined rollout's video, beside the simulator's run of the same policy
    from the same start when the simulator reproduces that start."""
    config = env.model.config
    if env.start == "sim":  # the imagination started from this very reset
        from robot_learn.envs import make_env

        sim = make_env(config.task, cameras=(env.camera,), image_size=config.image_size)
        start = (sim, sim.reset(seed=seed)[0])
    else:
        start = simulator_start(config.task, env.starts.store, env.start_episode, env.camera, config.image_size,
                                config.history)
    real = None
    if start is not None:
        sim, sim_obs = start
        try:
            real = run_in_simulator(policy, sim, sim_obs, len(frames) - 1, seed, env.camera, _policy_obs)
        finally:
            sim.close()
    return write_rollout_video(video_dir, seed, env.start_episode, frames, success, real)
