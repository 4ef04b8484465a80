"""Per-frame features of a frozen frame encoder for a whole store, through the store's
feature cache (``robot_learn.data.feature_cache``): pixel policies train on them, and the
phase guide's dynamics model and prototypes are built from them."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from robot_learn.data.feature_cache import load_or_build_feature_cache
from robot_learn.policies.frame_encoder import FEATURES_KEY, frozen_features


def cached_frame_features(store: Any, encoder: Any, device: Any = "cpu", progress_bar: bool = False,
                          log: Any = print) -> np.ndarray:
    """Every committed frame's features by the frozen ``encoder``, from the store's feature cache
    (built if missing or made by another encoder)."""
    def encode(images: dict[str, np.ndarray], instructions: list[str]) -> np.ndarray:
        frames = {c: torch.from_numpy(np.ascontiguousarray(v)).to(device) for c, v in images.items()}
        text = instructions if encoder.text is not None else None
        return frozen_features(encoder, frames, text).cpu().numpy()

    encoder.to(device)
    try:
        return load_or_build_feature_cache(store, FEATURES_KEY, encoder.identity(), encoder.config.cameras, encode,
                                           log=log, progress_bar=progress_bar, computed_on=torch.device(device).type)
    finally:
        encoder.cpu()
