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
