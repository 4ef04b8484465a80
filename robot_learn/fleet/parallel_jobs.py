"""Evaluation rollouts, scripted demo collection and world-model rollouts split over Ray workers.

Each worker runs our own code on its share of the seeds: :func:`~robot_learn.evaluation.evaluate`
for rollouts, :func:`~robot_learn.envs.demos.record_demo_episode` for demos and
:func:`~robot_learn.world_models.rollout.generate_rollouts` for imagined episodes; episodes
go whole to one :class:`~.writer.EpisodeWriter` (the store's single writer). A demo or
an imagined episode is the one a single process gives for its seed; an evaluation's
episodes are those of a single process evaluating each worker's block of seeds (the
policy's sampling noise is seeded per evaluation call, and batched over its envs).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Sequence


def seed_blocks(episodes: int, workers: int, seed: int) -> list[tuple[int, int]]:
    """``(first seed, episodes)`` per worker: ``episodes`` consecutive seeds from ``seed``
    in at most ``workers`` contiguous blocks."""
    if episodes < 1 or workers < 1:
        raise ValueError(f"episodes and workers must be >= 1, got {episodes} and {workers}")
    base, extra = divmod(episodes, min(workers, episodes))
    blocks, start = [], seed
    for i in range(min(workers, episodes)):
        n = base + (i < extra)
        blocks.append((start, n))
        start += n
    return blocks


def _evaluate_block(policy_files: dict[str, bytes], task: str, seed: int, episodes: int,
                    kwargs: dict[str, Any]) -> Any:
    import torch

    from robot_learn.evaluation import evaluate
    from robot_learn.fleet.policy_transfer import policy_from_files

    torch.set_num_threads(1)
    return evaluate(policy_from_files(policy_files), task, episodes=episodes, seed=seed, workers=1,
                    vectorization="sync", **kwargs)


def evaluate_on_ray(policy: Any, task: str, episodes: int, workers: int, seed: int | None = None,
                    num_cpus: float = 1, **kwargs: Any) -> Any:
    """:func:`~robot_learn.evaluation.evaluate` of ``policy`` on seeds ``seed, seed+1, ...``
    split over ``workers`` Ray workers (one env each); ``kwargs`` go to ``evaluate``
    (``max_steps``, ``conditions``, ...). Returns one EvalResult with every episode in seed
    order: those of ``evaluate(..., seed=first, episodes=n, workers=1)`` per block of
    :func:`seed_blocks`."""
    import ray

    from robot_learn.evaluation.results import EvalResult
    from robot_learn.evaluation.rollout import EVAL_SEED
    from robot_learn.fleet.policy_transfer import policy_to_files

    seed = EVAL_SEED if seed is None else int(seed)
    start = time.perf_counter()
    files = ray.put(policy_to_files(policy))
    job = ray.remote(_evaluate_block).options(num_cpus=num_cpus)
    parts = ray.get([job.remote(files, task, first, n, kwargs) for first, n in seed_blocks(episodes, workers, seed)])
    info = {**parts[0].info, "ray_workers": len(parts)}
    return EvalResult(task=task, episodes=[e for p in parts for e in p.episodes],
                      wall_time_s=time.perf_counter() - start, info=info)


def _collect_block(writer: Any, task: str, seed: int, episodes: int, settings: dict[str, Any]) -> tuple[int, int]:
    import ray

    from robot_learn.envs.demos import record_demo_episode
    from robot_learn.envs.registry import make_env, make_expert

    env = make_env(task, cameras=tuple(settings["cameras"]), image_size=settings["image_size"],
                   max_steps=settings["max_steps"])
    successes = stored = 0
    try:
        for s in range(seed, seed + episodes):
            # A fresh expert per episode: its noise depends only on that episode's seed.
            steps, meta = record_demo_episode(env, make_expert(task, noise=settings["noise"], seed=s), s,
                                              settings["obs_keys"])
            successes += meta["success"]
            if meta["success"] or settings["keep_failures"]:
                ray.get(writer.append.remote(steps, {**meta, "task": task, "source": settings["source"]}))
                stored += 1
    finally:
        env.close()
    return successes, stored


def collect_demos_on_ray(task: str, episodes: int, path: str | Path, workers: int, *, noise: float = 0.0,
                         seed: int = 0, cameras: Sequence[str] = (), image_size: int = 96,
                         max_steps: int | None = None, keep_failures: bool = False, source: str = "demo",
                         obs_keys: Sequence[str] | None = None, num_cpus: float = 1) -> Any:
    """Scripted expert episodes of ``task`` (seeds ``seed + i``) recorded by ``workers`` Ray
    workers into the store at ``path`` through one writer; as
    :func:`~robot_learn.envs.demos.collect_demos` (the store's episode order follows
    completion, each episode keeps its seed)."""
    import ray

    from robot_learn.envs.demos import DEFAULT_OBS_KEYS, CollectSummary
    from robot_learn.envs.registry import check_task_name
    from robot_learn.fleet.writer import EpisodeWriter

    check_task_name(task)
    writer = ray.remote(EpisodeWriter).options(num_cpus=0).remote(str(path))
    settings = {"noise": float(noise), "cameras": list(cameras), "image_size": int(image_size),
                "max_steps": max_steps, "keep_failures": bool(keep_failures), "source": source,
                "obs_keys": tuple(obs_keys or DEFAULT_OBS_KEYS)}
    job = ray.remote(_collect_block).options(num_cpus=num_cpus)
    try:
        counts = ray.get([job.remote(writer, task, first, n, settings)
                          for first, n in seed_blocks(episodes, workers, seed)])
        ray.get(writer.close.remote())
    finally:
        ray.kill(writer)
    return CollectSummary(path=Path(path), attempted=episodes, successes=sum(c[0] for c in counts),
                          stored=sum(c[1] for c in counts))


def _rollout_block(writer: Any, policy_files: dict[str, bytes], checkpoint: str, starts: str, seed: int,
                   episodes: int, max_steps: int | None, settings: dict[str, Any], scorer: str | None = None,
                   start: str = "store") -> Any:
    import torch

    from robot_learn.fleet.policy_transfer import policy_from_files
    from robot_learn.fleet.writer import RemoteStore
    from robot_learn.world_models import load_world_model
    from robot_learn.world_models.rollout import generate_rollouts, rollout_env

    torch.set_num_threads(1)
    with rollout_env(load_world_model(checkpoint), starts, max_steps, scorer, start) as env:
        return generate_rollouts(policy_from_files(policy_files), env, episodes, RemoteStore(writer), seed=seed,
                                 **settings)


def generate_rollouts_on_ray(policy: Any, checkpoint: str | Path, starts: str | Path, episodes: int,
                             out: str | Path, workers: int, *, seed: int = 0, max_steps: int | None = None,
                             policy_id: str = "", round_index: int = 0, num_cpus: float = 1,
                             scorer: str | None = None, start: str = "store") -> Any:
    """:func:`~robot_learn.world_models.rollout.generate_rollouts` of ``policy`` in the world
    model at ``checkpoint`` (rollouts start from the episodes of the store ``starts``), seeds
    ``seed, seed+1, ...`` split over ``workers`` Ray workers, the episodes written to the store
    at ``out`` through one writer. Each episode is the one a single process imagines for its
    seed; the store's order follows completion. Workers read ``checkpoint`` and ``starts``
    from disk (on a cluster, a disk they share). The writer creates ``out`` at the start,
    so it exists even if every rollout is stopped. ``scorer`` labels the imagined steps
    (``rollout.make_scorer``); ``start="sim"`` starts each rollout from a fresh MuJoCo reset with its
    seed instead of a stored episode. Returns one RolloutSummary."""
    import ray

    from robot_learn.fleet.policy_transfer import policy_to_files
    from robot_learn.fleet.writer import EpisodeWriter
    from robot_learn.world_models.rollout import RolloutSummary

    writer = ray.remote(EpisodeWriter).options(num_cpus=0).remote(str(out))
    files = ray.put(policy_to_files(policy))
    settings = {"policy_id": policy_id, "round_index": int(round_index)}
    job = ray.remote(_rollout_block).options(num_cpus=num_cpus)
    try:
        parts = ray.get([job.remote(writer, files, str(checkpoint), str(starts), first, n, max_steps, settings,
                                    scorer, start)
                         for first, n in seed_blocks(episodes, workers, seed)])
        ray.get(writer.close.remote())
    finally:
        ray.kill(writer)
    return RolloutSummary(written=sum(p.written for p in parts), successes=sum(p.successes for p in parts),
                          stopped=[line for p in parts for line in p.stopped])
