"""Turn the sampler's numpy batches (or env observations) into torch tensors."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch


def to_torch(batch: Any, device: torch.device | str = "cpu") -> Any:
    """Recursively convert numpy arrays in ``batch`` to tensors on ``device``.

    Dtypes are kept (uint8 images stay uint8; the policy normalises them), except
    float64, which becomes float32. Dicts are walked, strings and lists of strings
    (instructions) are returned as they are, tensors are moved to ``device``.
    """
    device = torch.device(device)
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, np.ndarray):
        if batch.dtype == np.float64:
            batch = batch.astype(np.float32)
        if batch.dtype.kind in "US" or batch.dtype == object:
            return [str(x) for x in batch.tolist()]
        return torch.from_numpy(np.ascontiguousarray(batch)).to(device)
    if isinstance(batch, np.generic):
        return to_torch(np.asarray(batch), device)
    if isinstance(batch, Mapping):
        return {key: to_torch(value, device) for key, value in batch.items()}
    if isinstance(batch, (list, tuple)) and batch and not all(isinstance(x, str) for x in batch):
        return type(batch)(to_torch(x, device) for x in batch)
    return batch
