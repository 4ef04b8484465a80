"""Vectorised policy rollouts on held-out seeds: ``evaluate``.

Episodes run in *waves*: a wave resets every sub-env with its own held-out seed,
calls ``policy.reset()`` once and steps the batch until every episode of the wave
has ended. The policy keeps one observation history and one action queue for the
whole batch (``Policy.select_action``), so per-env resets in the middle of a wave
would corrupt the other envs' queues; waves keep each episode's policy state
clean at the cost of waiting for the wave's longest episode.

Autoreset is DISABLED (gymnasium 1.x): an env that ends is reset explicitly with a
``reset_mask`` so it stays valid while the rest of the wave finishes, and its later
steps are ignored.
"""

from __future__ import annotations

import functools
import os
import time
from pathlib import Path
from typing import Any, Sequence

import gymnasium as gym
import numpy as np
import torch
from tqdm import tqdm

from robot_learn.evaluation.recording import EpisodeSaver
from robot_learn.evaluation.results import EpisodeResult, EvalResult
from robot_learn.evaluation.videos import tile_cameras, write_video
from robot_learn.policies import check_compatible

EVAL_SEED = 1_000_000  # disjoint from demo seeds 0, 1, 2, ...
VIDEO_CAMERAS = ("front", "wrist")


def policy_cameras(policy: Any) -> tuple[tuple[str, ...], int | None]:
    """Cameras and image size the policy reads, from its ``obs_shapes``."""
    cams, size = [], None
    for key, shape in policy.obs_shapes.items():
        if key.startswith("images/"):
            cams.append(key.split("/", 1)[1])
            size = int(shape[0])
    return tuple(cams), size


def make_vector_env(task: str, num_envs: int, cameras: Sequence[str], image_size: int,
                    max_steps: int | None, vectorization: str = "auto",
                    context: str | None = "spawn", conditions: Any = None) -> gym.vector.VectorEnv:
    """``num_envs`` copies of ``task`` in a Sync (1 env or ``"sync"``) or Async vector env,
    under ``conditions`` (an :class:`~robot_learn.envs.conditions.EnvConditions`; None: the defaults).

    Workers are started with ``spawn`` by default: forking a process that already
    holds torch threads or a GL context is fragile. They send observations through
    pipes, not shared memory: gymnasium reads a ``Text`` space (the instruction) from
    shared memory once, when the vector env is built, so every step would carry 200
    'a's instead of the env's words.
    """
    from robot_learn.envs.conditions import DEFAULT_CONDITIONS

    if vectorization not in ("auto", "sync", "async"):
        raise ValueError(f"unknown vectorization '{vectorization}'; valid: auto, sync, async")
    fn = functools.partial((conditions or DEFAULT_CONDITIONS).make_env, task, cameras=tuple(cameras),
                           image_size=image_size, max_steps=max_steps)
    fns = [fn] * num_envs
    mode = gym.vector.AutoresetMode.DISABLED
    if vectorization == "sync" or (vectorization == "auto" and num_envs == 1):
        return gym.vector.SyncVectorEnv(fns, autoreset_mode=mode)
    return gym.vector.AsyncVectorEnv(fns, autoreset_mode=mode, context=context, shared_memory=False)


def observation_shapes(space: gym.spaces.Dict) -> dict[str, tuple[int, ...]]:
    """Per-step shapes of an env's array observations, flat (``images/front``)."""
    shapes: dict[str, tuple[int, ...]] = {}
    for key, sub in space.spaces.items():
        if isinstance(sub, gym.spaces.Dict):
            for name, inner in observation_shapes(sub).items():
                shapes[f"{key}/{name}"] = inner
        elif isinstance(sub, gym.spaces.Box):
            shapes[key] = tuple(int(d) for d in sub.shape)
    return shapes


def vector_policy_obs(obs: dict[str, Any], needed: dict[str, tuple[int, ...]],
                num_envs: int) -> dict[str, Any]:
    """The part of a vector-env observation the policy reads (``needed`` is its
    ``obs_shapes``), plus the instructions as a list of str. Dropping the rest
    keeps video-only camera frames out of the policy's observation history."""
    out: dict[str, Any] = {}
    for key in needed:
        if key.startswith("images/"):
            out.setdefault("images", {})[key.split("/", 1)[1]] = obs["images"][key.split("/", 1)[1]]
        else:
            out[key] = obs[key]
    if "instruction" in obs:
        instr = obs["instruction"]
        out["instruction"] = [instr] * num_envs if isinstance(instr, str) else [str(s) for s in instr]
    return out


def _frame(obs: dict[str, Any], i: int, cameras: Sequence[str]) -> np.ndarray | None:
    images = obs.get("images") or {}
    present = [c for c in cameras if c in images]
    if not present:
        return None
    return tile_cameras({c: np.asarray(images[c][i]) for c in present})


def evaluate(policy: Any, task: str, episodes: int = 50, seed: int = EVAL_SEED,
             workers: int = 2, videos: int = 4, out_dir: str | Path | None = None,
             max_steps: int | None = None, *, image_size: int | None = None,
             vectorization: str = "auto", video_cameras: Sequence[str] = VIDEO_CAMERAS,
             fps: int = 10, progress_bar: bool = False,
             generator_seed: int | None = 0, conditions: Any = None, predict: Any = None,
             save_to: Any = None, save_meta: dict[str, Any] | None = None) -> EvalResult:
    """Roll ``policy`` out on ``episodes`` held-out seeds ``seed, seed+1, ...`` of ``task``.

    ``workers`` sub-envs step together (``vectorization``: ``"auto"`` is an
    AsyncVectorEnv when ``workers > 1``, else a SyncVectorEnv; ``"sync"`` or
    ``"async"`` force one); the policy runs batched over them in this process.
    The first ``videos`` episodes are recorded (``video_cameras`` side by side) to
    ``out_dir/videos/episode_XXX.mp4``; without ``out_dir`` no video is made.
    Only the waves holding those episodes render the video cameras, so a
    state-only policy pays for rendering just there. ``generator_seed`` seeds the
    sampling noise so an evaluation is repeatable (None: torch's global RNG).
    ``conditions`` (:class:`~robot_learn.envs.conditions.EnvConditions`; None: the
    defaults) sets the start spread and disturbances; each episode's disturbances are
    counted in its result. ``predict`` (e.g. a guided sampler such as PCG's) plans the
    policy's chunks in place of ``predict_action_chunk`` (``select_action(predict=...)``);
    its ``reset()``, if it has one, runs at each wave's start. ``save_to`` (an
    :class:`~robot_learn.data.EpisodeStore` open for appending) receives every episode as
    :class:`~robot_learn.evaluation.recording.EpisodeSaver` records it, with ``save_meta``
    (e.g. ``policy_id``) in each episode's meta.
    """
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    if vectorization not in ("auto", "sync", "async"):
        raise ValueError(f"unknown vectorization '{vectorization}'; valid: auto, sync, async")
    videos = max(0, min(videos, episodes)) if out_dir is not None else 0
    cams, policy_size = policy_cameras(policy)
    if policy_size is not None and image_size is not None and image_size != policy_size:
        raise ValueError(f"image_size={image_size} differs from the policy's {policy_size}")
    size = image_size or policy_size or 96
    video_cams = tuple(dict.fromkeys(cams + tuple(video_cameras)))
    num_envs = min(workers, episodes)
    is_async = vectorization == "async" or (vectorization == "auto" and num_envs > 1)
    generator = None
    if generator_seed is not None:
        generator = torch.Generator(device=policy.device).manual_seed(generator_seed)

    results: list[EpisodeResult | None] = [None] * episodes
    saver = None if save_to is None else EpisodeSaver(save_to, task, cams, save_meta)
    env_sets: dict[tuple[str, ...], gym.vector.VectorEnv] = {}

    def envs_for(cameras: tuple[str, ...]) -> gym.vector.VectorEnv:
        if cameras not in env_sets:
            envs = make_vector_env(task, num_envs, cameras, size, max_steps,
                                   "async" if is_async else "sync", conditions=conditions)
            env_sets[cameras] = envs
            # IncompatiblePolicyError (a ValueError) names the mismatched dims.
            check_compatible(policy, action_dim=int(envs.single_action_space.shape[0]),
                             obs_shapes=observation_shapes(envs.single_observation_space))
        return env_sets[cameras]

    was_training = policy.training
    policy.eval()
    threads = torch.get_num_threads()
    if is_async:
        # Leave a core per env worker: torch's spinning intra-op threads competing
        # with the workers made async evaluation ~10x slower on a 2-core machine.
        torch.set_num_threads(max(1, min(threads, (os.cpu_count() or 1) - num_envs)))
    start = time.perf_counter()
    try:
        bar = tqdm(total=episodes, desc=f"eval {task}", unit="ep", disable=not progress_bar)
        for wave in range(0, episodes, num_envs):
            idx = list(range(wave, min(wave + num_envs, episodes)))
            # Spare envs in a short last wave run seeds past the range; ignored.
            wave_seeds = [seed + wave + k for k in range(num_envs)]
            envs = envs_for(video_cams if wave < videos else cams)
            _run_wave(policy, envs, wave_seeds, idx, results, videos, video_cameras,
                      generator, out_dir, fps, predict, saver)
            bar.update(len(idx))
        bar.close()
    finally:
        for envs in env_sets.values():
            envs.close()
        torch.set_num_threads(threads)
        policy.train(was_training)
    info = {"workers": num_envs, "vectorization": "async" if is_async else "sync",
            "seed": seed, "max_steps": max_steps,
            "policy": getattr(policy, "name", type(policy).__name__),
            "cameras": list(cams), "image_size": size}
    if conditions is not None and not conditions.is_default:
        info["conditions"] = conditions.describe()
    if predict is not None:
        info["predict"] = getattr(predict, "label", type(predict).__name__)
    return EvalResult(task=task, episodes=[r for r in results if r is not None],
                      wall_time_s=time.perf_counter() - start, info=info)


def _run_wave(policy: Any, envs: gym.vector.VectorEnv, wave_seeds: list[int],
              idx: list[int], results: list, videos: int, video_cameras: Sequence[str],
              generator: torch.Generator | None, out_dir: str | Path | None, fps: int,
              predict: Any = None, saver: EpisodeSaver | None = None) -> None:
    """Run one wave of episodes and fill ``results`` at positions ``idx``."""
    n = envs.num_envs
    obs, reset_info = envs.reset(seed=wave_seeds)
    if saver is not None:
        saver.start(obs, reset_info, n)
    policy.reset()
    if hasattr(predict, "reset"):
        predict.reset()
    active = np.zeros(n, dtype=bool)
    active[: len(idx)] = True
    length = np.zeros(n, dtype=int)
    success = np.zeros(n, dtype=bool)
    progress = np.zeros(n, dtype=float)
    peak = np.zeros(n, dtype=float)
    diverged = np.zeros(n, dtype=bool)
    disturbed: list[dict[str, int]] = [{} for _ in range(n)]
    frames: dict[int, list[np.ndarray]] = {}
    for k, ep in enumerate(idx):
        if ep < videos:
            first = _frame(obs, k, video_cameras)
            if first is not None:
                frames[k] = [first]
    needed = policy.obs_shapes
    with torch.inference_mode():
        while active.any():
            steer = {} if predict is None else {"predict": predict}  # plain policies need not take it
            action = policy.select_action(vector_policy_obs(obs, needed, n), generator=generator, **steer)
            action = action.detach().cpu().numpy().astype(np.float32)
            seen = obs
            obs, reward, terminated, truncated, info = envs.step(action)
            if saver is not None:
                saver.step(seen, action, reward, info, active)
            ended = np.asarray(terminated) | np.asarray(truncated)
            for k in np.flatnonzero(active):
                length[k] += 1
                success[k] = bool(info["success"][k])
                progress[k] = float(info["progress"][k])
                peak[k] = max(peak[k], progress[k])
                if "diverged" in info:  # an external env's simulation blew up (a failure)
                    diverged[k] = bool(info["diverged"][k])
                if "disturbances" in info:  # counts so far, per kind (envs.disturbances)
                    disturbed[k] = {kind: int(c[k]) for kind, c in info["disturbances"].items()
                                    if not kind.startswith("_")}
                if k in frames:
                    frames[k].append(_frame(obs, k, video_cameras))
                if ended[k]:
                    active[k] = False
            if ended.any() and active.any():
                # Keep finished envs valid (DISABLED autoreset) until the wave ends.
                obs, _ = envs.reset(seed=wave_seeds, options={"reset_mask": ended.copy()})
    if saver is not None:
        saver.finish(wave_seeds, success, len(idx))
    for k, ep in enumerate(idx):
        video = None
        if k in frames and out_dir is not None:
            video = str(write_video(frames[k], Path(out_dir) / "videos" / f"episode_{ep:03d}.mp4",
                                    fps=fps))
        results[ep] = EpisodeResult(seed=wave_seeds[k], success=bool(success[k]),
                                    progress=float(progress[k]), length=int(length[k]),
                                    video=video, disturbances=disturbed[k], diverged=bool(diverged[k]),
                                    peak_progress=float(peak[k]))
