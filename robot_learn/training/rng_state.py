"""Capture and restore every global RNG that training draws from.

Dropout, random crops and diffusion noise use torch's generators; samplers and
augmentations may use numpy's or Python's global ones. Exact resume needs all.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import torch


def seed_everything(seed: int) -> None:
    """Seed Python, numpy and torch (CPU and every CUDA device)."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def capture_rng_state() -> dict[str, Any]:
    """The state of all global RNGs, as plain tensors, lists, ints and floats."""
    np_state = np.random.get_state(legacy=False)
    version, mt_state, gauss_next = random.getstate()
    return {
        "torch": torch.get_rng_state(),
        "cuda": list(torch.cuda.get_rng_state_all()) if torch.cuda.is_available() else [],
        "numpy": {
            "bit_generator": np_state["bit_generator"],
            "key": torch.from_numpy(np_state["state"]["key"].astype(np.int64)),
            "pos": int(np_state["state"]["pos"]),
            "has_gauss": int(np_state["has_gauss"]),
            "gauss": float(np_state["gauss"]),
        },
        "python": {"version": version, "state": list(mt_state), "gauss_next": gauss_next},
    }


def restore_rng_state(state: dict[str, Any]) -> None:
    """Inverse of :func:`capture_rng_state`."""
    torch.set_rng_state(state["torch"])
    if state["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
    np_state = state["numpy"]
    np.random.set_state(
        {
            "bit_generator": np_state["bit_generator"],
            "state": {"key": np_state["key"].numpy().astype(np.uint32), "pos": np_state["pos"]},
            "has_gauss": np_state["has_gauss"],
            "gauss": np_state["gauss"],
        }
    )
    py = state["python"]
    random.setstate((py["version"], tuple(py["state"]), py["gauss_next"]))


class PreservedRNG:
    """Context manager that leaves every global RNG as it found it.

    Evaluation runs inside one, so evaluating (or not, after a resume) cannot
    change the random stream that training sees.
    """

    def __enter__(self) -> "PreservedRNG":
        self._saved = capture_rng_state()
        return self

    def __exit__(self, *exc: object) -> None:
        restore_rng_state(self._saved)
