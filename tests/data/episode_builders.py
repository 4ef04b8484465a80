"""Deterministic episodes for the episode-store tests (also imported by the
killed-writer subprocess in test_atomic_append.py)."""

from __future__ import annotations

import numpy as np


def make_steps(length: int, seed: int, cameras: tuple[str, ...] = ("front",),
               image_size: int = 8) -> dict[str, np.ndarray]:
    """An episode with every per-step key, its values determined by `seed`."""
    rng = np.random.default_rng(seed)
    steps = {
        "state": rng.normal(size=(length, 10)).astype(np.float32),
        "env_state": rng.normal(size=(length, 14)).astype(np.float32),
        "action": rng.normal(size=(length, 5)).astype(np.float32),
        "policy_action": rng.normal(size=(length, 5)).astype(np.float32),
        "intervention": rng.random(length) < 0.3,
        "reward": rng.random(length).astype(np.float32),
        "progress": np.linspace(0, 1, length, dtype=np.float32),
        "phase": rng.integers(0, 5, size=length).astype(np.int64),
    }
    for cam in cameras:
        steps[f"images/{cam}"] = rng.integers(0, 256, size=(length, image_size, image_size, 3),
                                              dtype=np.uint8)
    return steps


def make_meta(index: int, **overrides) -> dict:
    meta = {"task": "stack", "instruction": f"put the red cube on the blue cube #{index}",
            "success": index % 2 == 0, "seed": index, "source": "demo"}
    meta.update(overrides)
    return meta


def make_version1_store(path, lengths) -> list[dict[str, np.ndarray]]:
    """Write a store as robot_learn wrote them before chunk checksums (format
    version 1): plain zstd chunks, all-zero chunks not written (zarr's default).
    Episode i is `make_steps(lengths[i], seed=i)` with `make_meta(i)`; returns the steps."""
    import json

    import zarr

    episodes = [make_steps(n, seed=i) for i, n in enumerate(lengths)]
    root = zarr.open_group(store=str(path), mode="w-")
    root.attrs["robot_learn"] = {"format": "robot_learn.episode_store", "version": 1,
                                 "commit_record": "episode_store.json"}
    data, meta = root.create_group("data"), root.create_group("meta")
    schema = {}
    for key in episodes[0]:
        values = np.concatenate([ep[key] for ep in episodes])
        frames = 4 if key.startswith("images/") else 2048
        data.create_array(key, shape=values.shape, chunks=(frames, *values.shape[1:]), dtype=values.dtype,
                          compressors=zarr.codecs.ZstdCodec(level=3))[:] = values
        schema[key] = {"dtype": str(values.dtype), "shape": list(values.shape[1:])}
    rows = [{"round": 0, "policy_id": "", "operator": "", "created": "2025-01-01T00:00:00+00:00",
             **make_meta(i)} for i in range(len(lengths))]
    meta.create_array("episode_ends", shape=(len(lengths),), chunks=(1024,), dtype="int64")[:] = np.cumsum(lengths)
    for name in rows[0]:
        values = np.array([r[name] for r in rows])
        meta.create_array(name, shape=values.shape, chunks=(1024,),
                          dtype=str if values.dtype.kind == "U" else values.dtype)[:] = values
    root.create_group("stats")
    (path / "episode_store.json").write_text(json.dumps({
        "format": "robot_learn.episode_store", "version": 1, "num_episodes": len(lengths),
        "num_frames": int(sum(lengths)), "schema": schema}))
    return episodes
