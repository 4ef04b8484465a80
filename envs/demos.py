"""Recording scripted expert episodes into an episode store (demonstrations)."""

from __future__ import annotations

import os
import shutil
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np


@dataclass(frozen=True)
class CollectSummary:
    """What a collection run did."""

    path: Path
    attempted: int
    successes: int
    stored: int


# Low-dim observation keys recorded by default; "objects" (colour-ordered object
# slots, see TabletopEnv._objects) is opt-in so older stores keep one key set.
DEFAULT_OBS_KEYS = ("state", "env_state")
OPTIONAL_OBS_KEYS = ("objects",)


def run_expert(env: Any, expert: Any, seed: int, recorder: Any, *, to_rest: bool = False,
               timestamps: bool = False) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run the expert for one episode from ``env.reset(seed)``, recording each step into
    ``recorder`` (an :class:`~robot_learn.data.EpisodeRecorder`); returns the final
    observation and the info of every step.

    Row t holds the observation before action t, action t, the reward of that
    step, the progress of observation t (from the previous info) and the phase
    the expert was in when it chose action t (and, with ``timestamps``, the wall
    clock when observation t was taken). The episode ends at success or the time
    limit; ``to_rest`` goes on past success until the expert is back at its start
    pose (episodes to be time-reversed), still within the time limit.
    """
    obs, info = env.reset(seed=seed)
    expert.reset(env)
    progress = float(info.get("progress", 0.0))
    infos = []
    while True:
        observed_at = time.time() if timestamps else None
        action = np.asarray(expert.act(obs, env), dtype=np.float32)
        phase = int(expert.phase)
        next_obs, reward, terminated, truncated, info = env.step(action)
        recorder.record(obs, action, reward=float(reward), progress=progress, phase=phase, timestamp=observed_at)
        infos.append(info)
        obs, progress = next_obs, float(info.get("progress", progress))
        # Past success the env stops counting towards truncation: to_rest counts itself.
        done = (expert.at_rest or len(infos) >= env.unwrapped.max_steps) if to_rest else terminated
        if done or truncated:
            return obs, infos


def record_demo_episode(env: Any, expert: Any, seed: int, obs_keys: Sequence[str] = DEFAULT_OBS_KEYS,
                        to_rest: bool = False, timestamps: bool = False) -> tuple[dict[str, np.ndarray], dict]:
    """Run the expert for one episode; returns (steps, meta) in the store's format
    (rows as :func:`run_expert` records them; the expert is the only controller, so
    ``policy_action`` is the action)."""
    from robot_learn.data import EpisodeRecorder

    spaces = getattr(env.observation_space, "spaces", {})
    offered = [k for k in (*DEFAULT_OBS_KEYS, *OPTIONAL_OBS_KEYS) if k in spaces]
    unknown = [k for k in obs_keys if k not in offered]
    if unknown:
        raise ValueError(f"cannot record observation keys {unknown}; this env offers {offered}")
    recorder = EpisodeRecorder(obs_keys)
    obs, infos = run_expert(env, expert, seed, recorder, to_rest=to_rest, timestamps=timestamps)
    meta = {"instruction": str(obs.get("instruction", "")), "success": bool(infos[-1].get("success", False)),
            "seed": int(seed)}
    return recorder.steps(), meta


@contextmanager
def staged_store(path: str | Path) -> Iterator[Path]:
    """Collect a new store beside ``path`` (at ``<path>.partial``) and move it to ``path``
    only when the block ends without an error, so a collection that is killed part way
    leaves no store at ``path`` that a later run would take for complete. A ``.partial``
    left by such a run is deleted first; one that a live process is still writing is a
    StoreError naming it, and is left alone."""
    from robot_learn.data.lock import WriterLock

    path = Path(path)
    staging = path.with_name(path.name + ".partial")
    if staging.exists():
        WriterLock(staging).release()  # its writer's flock goes with it when it is killed
        print(f"      removing {staging}, left by a collection that did not finish")
        shutil.rmtree(staging)
    yield staging
    if staging.exists():
        os.replace(staging, path)


def collect_demos(task: str, episodes: int, path: str | Path, *, noise: float = 0.0,
                  seed: int = 0, cameras: Sequence[str] = ("front", "wrist"),
                  image_size: int = 96, max_steps: int | None = None,
                  keep_failures: bool = False, source: str = "demo",
                  progress_bar: bool = True, obs_keys: Sequence[str] = DEFAULT_OBS_KEYS,
                  wait: bool | float = False, to_rest: bool = False, conditions: Any = None,
                  workers: int | None = None) -> CollectSummary:
    """Record ``episodes`` expert episodes (seeds ``seed + i``) into the store at ``path``.

    The store is created if missing and appended to otherwise. Failed episodes
    are dropped unless ``keep_failures``. If another process is writing the store,
    ``wait`` (True, or seconds) waits for it; otherwise that is a StoreError.
    ``to_rest``: each episode goes on past success until the expert is back at its
    start pose (see :func:`run_expert`), as episodes to be time-reversed must.
    ``conditions`` (:class:`~robot_learn.envs.conditions.EnvConditions`; None: the
    defaults) sets the start spread and disturbances the expert records under.
    ``workers`` threads record episodes, each with its own env (None: one per CPU, at most 4,
    with a headless GL, else 1; see ``episode_threads``); the store gets the same episodes,
    in the same order, whatever the count.
    """
    from tqdm import tqdm

    from robot_learn.data import EpisodeStore

    from .episode_threads import episodes_in_order
    from .registry import check_task_name, make_env, make_expert
    from .scene_frames import default_render_workers

    check_task_name(task)  # ValueError lists the valid tasks (external ones included)
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    path = Path(path)
    if workers is not None and workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    workers = default_render_workers() if workers is None else workers

    def new_env() -> Any:
        return (conditions.make_env if conditions is not None else make_env)(
            task, cameras=tuple(cameras), image_size=image_size, max_steps=max_steps)

    def record(env: Any, i: int) -> tuple[dict[str, np.ndarray], dict]:
        # A fresh expert per episode: its noise depends only on that episode's seed.
        expert = make_expert(task, noise=noise, seed=seed + i)
        return record_demo_episode(env, expert, seed + i, obs_keys, to_rest=to_rest)

    # The env first: settings it refuses (e.g. a drop spot for a forward task) create no store.
    env = new_env()
    try:
        store = EpisodeStore.open_or_create(path, wait=wait)
    except BaseException:
        env.close()
        raise
    successes = stored = 0
    bar = tqdm(total=episodes, desc=f"collect {task}", unit="ep", disable=not progress_bar)
    threaded = workers > 1 and episodes > 1  # the env only checked the settings: each worker makes its own
    recorded = episodes_in_order(new_env, record, episodes, workers, env=None if threaded else env)
    try:
        if threaded:
            checked, env = env, None
            checked.close()
        for i, (steps, meta) in enumerate(recorded):
            successes += meta["success"]
            if meta["success"] or keep_failures:
                store.append_episode(steps, {**meta, "task": task, "source": source})
                stored += 1
            bar.update(1)
            bar.set_postfix(success=f"{successes}/{i + 1}", stored=stored)
    finally:
        recorded.close()  # stops the recording threads
        bar.close()
        if env is not None:
            env.close()
        store.close()
    return CollectSummary(path=path, attempted=episodes, successes=successes, stored=stored)


def collect_multitask_demos(tasks: Sequence[str], episodes_per_task: int, path: str | Path,
                            **kwargs: Any) -> dict[str, CollectSummary]:
    """Record ``episodes_per_task`` expert episodes of each task into one store at ``path``.

    Each task's episodes carry ``meta["task"]``, so ``store.view(task=...)`` still
    separates them; ``kwargs`` go to :func:`collect_demos` (cameras, noise, seed, ...).
    Used to train one multi-task policy (e.g. the discrete-diffusion VLA) on every
    family and variant: ``collect_multitask_demos(TASK_NAMES, 50, "data/all.zarr")``.
    """
    from .registry import TASK_NAMES

    unknown = [t for t in tasks if t not in TASK_NAMES]
    if unknown or not tasks:
        raise ValueError(f"unknown tasks {unknown or list(tasks)}; valid tasks: {', '.join(TASK_NAMES)}")
    return {task: collect_demos(task, episodes_per_task, path, **kwargs) for task in tasks}
