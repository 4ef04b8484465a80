"""Normalisation statistics per feature dim: min, max, mean, std, q01, q99."""

from __future__ import annotations

from typing import Any

import numpy as np

from robot_learn.data.errors import StoreError

STAT_NAMES = ("min", "max", "mean", "std", "q01", "q99")


def compute_stats(values: np.ndarray) -> dict[str, np.ndarray]:
    """Statistics over the time axis (axis 0), one value per feature dim, as float32.

    Computed in float64 so long datasets don't lose precision; std is the population
    std (ddof=0); quantiles use numpy's default linear interpolation."""
    if len(values) == 0:
        raise StoreError("cannot compute statistics of an empty array (no frames)")
    x = np.asarray(values, dtype=np.float64)
    if not np.isfinite(x).all():
        raise StoreError("cannot compute statistics: the values hold NaN or Inf "
                         "(EpisodeStore.check_finite names where)")
    q01, q99 = np.quantile(x, [0.01, 0.99], axis=0)
    out = {"min": x.min(axis=0), "max": x.max(axis=0), "mean": x.mean(axis=0),
           "std": x.std(axis=0), "q01": q01, "q99": q99}
    return {k: np.asarray(v, dtype=np.float32) for k, v in out.items()}


def stats_to_json(stats: dict[str, np.ndarray], num_episodes: int, num_frames: int) -> dict[str, Any]:
    """JSON-able record (float32 values round-trip exactly through Python floats)."""
    record: dict[str, Any] = {"num_episodes": num_episodes, "num_frames": num_frames,
                              "shape": list(stats["min"].shape)}
    record.update({k: np.asarray(stats[k], dtype=np.float64).ravel().tolist() for k in STAT_NAMES})
    return record


def stats_from_json(record: dict[str, Any]) -> dict[str, np.ndarray]:
    shape = tuple(record["shape"])
    return {k: np.asarray(record[k], dtype=np.float32).reshape(shape) for k in STAT_NAMES}


def check_finite(arr: Any, key: str, num_frames: int, episode_ends: np.ndarray, block: int = 65536) -> None:
    """Raise StoreError naming the key, episode, step and dim of the first NaN/Inf in
    frames [0, num_frames) of `arr`. Non-float arrays cannot hold either and pass."""
    if arr.dtype.kind != "f":
        return
    for start in range(0, num_frames, block):
        chunk = arr[start:min(start + block, num_frames)]
        bad = ~np.isfinite(chunk)
        if not bad.any():
            continue
        where = np.argwhere(bad)[0]
        frame = start + int(where[0])
        ep = int(np.searchsorted(episode_ends, frame, side="right"))
        step = frame - (int(episode_ends[ep - 1]) if ep > 0 else 0)
        dim = tuple(int(i) for i in where[1:])
        raise StoreError(
            f"non-finite value {chunk[tuple(where)]} in {key!r} at episode {ep}, "
            f"step {step} (frame {frame}{', dim ' + str(dim if len(dim) > 1 else dim[0]) if dim else ''})")
