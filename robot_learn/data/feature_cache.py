"""Derived per-frame features kept beside a store: ``<store>/derived/<name>``.

A frozen frame encoder turns every frame's camera images (and its episode's
instruction) into a feature vector once; policy training then samples those
vectors like any low-dimensional key, at state-policy speed.

The cache is a plain zarr array whose attributes record what made it: the
encoder's ``identity`` (a hash of its config and weights), the cameras and the
store extent (episodes, frames). A cache whose record differs in anything, or
which does not cover the store's committed frames, is rebuilt with a message; it
is never used silently. The record cannot see the code that ran the encoder: the
same weights through other code (or another torch) give features that differ in
the last bits, and training grows such differences into another policy. So before
a cache is used, its first batch of frames is encoded again and must match it bit
for bit, in the batches the build used; otherwise it is rebuilt too (an encoder that
is not deterministic, as some GPU kernels are, then rebuilds it each time). The check
runs only on the kind of device that built the cache (``computed_on``): CPU and CUDA
differ in the last bits anyway, and checking across them would rebuild the cache at
every switch. The cache is written to a temporary name and renamed into place, so a
process killed while building it leaves the old cache or none.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import zarr

from robot_learn.data.errors import StoreError
from robot_learn.data.store import DERIVED_DIR, EpisodeStore

Encode = Callable[[Mapping[str, np.ndarray], Sequence[str]], np.ndarray]


def cache_record(store: EpisodeStore, identity: str, cameras: Sequence[str]) -> dict[str, Any]:
    """What a cache built now by encoder ``identity`` from ``cameras`` must record."""
    return {"encoder_identity": str(identity), "cameras": [str(c) for c in cameras],
            "num_episodes": store.num_episodes, "num_frames": store.num_frames}


def read_feature_cache(store: EpisodeStore, name: str, identity: str,
                       cameras: Sequence[str]) -> tuple[np.ndarray | None, str]:
    """``(features, "")`` when a valid cache exists, else ``(None, why it is not usable)``."""
    features, why, _record = _read_cache(store, name, identity, cameras)
    return features, why


def _read_cache(store: EpisodeStore, name: str, identity: str,
                cameras: Sequence[str]) -> tuple[np.ndarray | None, str, dict[str, Any]]:
    """``read_feature_cache``, plus the cache's whole record (how it was built)."""
    path = Path(store.path) / DERIVED_DIR / name
    if not path.exists():
        return None, "no cache yet", {}
    try:
        array = zarr.open_array(store=str(path), mode="r")
        record = dict(array.attrs.get("robot_learn_feature_cache", {}))
    except Exception as exc:  # zarr raises several types for a damaged array
        return None, f"unreadable cache ({exc})", {}
    wanted = cache_record(store, identity, cameras)
    differs = [k for k in wanted if record.get(k) != wanted[k]]
    if differs:
        what = ", ".join(f"{k} {record.get(k)!r} (now {wanted[k]!r})" for k in differs)
        return None, f"built with {what}", record
    return np.asarray(array[:]), "", record


def frame_instructions(store: EpisodeStore) -> np.ndarray:
    """Each committed frame's episode instruction."""
    return np.repeat(store.meta["instruction"], np.diff(np.append(0, store.episode_ends)))


def _encode_frames(store: EpisodeStore, cameras: Sequence[str], encode: Encode, instructions: np.ndarray,
                   start: int, end: int) -> np.ndarray:
    images = {c: store.read(f"images/{c}", start, end) for c in cameras}
    return np.asarray(encode(images, instructions[start:end].tolist()), dtype=np.float32)


def cache_matches_encoder(store: EpisodeStore, features: np.ndarray, cameras: Sequence[str], encode: Encode,
                          batch_size: int = 256) -> str:
    """An empty string when ``encode`` gives the cache's first batch again bit for bit (the
    batch the build encoded first, so the same shapes run), else how far it is off."""
    end = min(batch_size, store.num_frames)
    if end == 0:
        return ""
    again = _encode_frames(store, cameras, encode, frame_instructions(store), 0, end)
    if again.shape == features[:end].shape and np.array_equal(again, features[:end], equal_nan=True):
        return ""
    if again.shape != features[:end].shape:
        return f"features of shape {features.shape[1:]} (now {again.shape[1:]})"
    off = float(np.nanmax(np.abs(again - features[:end])))
    return (f"other code: its first {end} frames differ from a new encoding by up to {off:.3g} "
            f"(the same encoder weights run by other code or another torch)")


def build_feature_cache(store: EpisodeStore, name: str, identity: str, cameras: Sequence[str],
                        encode: Encode, batch_size: int = 256, progress_bar: bool = False,
                        computed_on: str = "cpu") -> np.ndarray:
    """Encode every committed frame with ``encode(images, instructions) -> [n, D]`` and
    write the cache (replacing any old one); ``computed_on``: the kind of device ``encode``
    runs on, recorded with the batch size."""
    from tqdm import tqdm

    missing = [c for c in cameras if f"images/{c}" not in store.keys]
    if missing:
        raise StoreError(f"store {str(store.path)!r} has no images for cameras {missing} (keys: "
                         f"{', '.join(store.keys) or 'none'}); collect demos with those cameras to cache "
                         f"frame features")
    instructions = frame_instructions(store)
    chunks = [_encode_frames(store, cameras, encode, instructions, start, min(start + batch_size, store.num_frames))
              for start in tqdm(range(0, store.num_frames, batch_size), desc=f"cache {name}", unit="batch",
                                disable=not progress_bar)]
    features = np.concatenate(chunks) if chunks else np.zeros((0, 0), np.float32)
    root = Path(store.path) / DERIVED_DIR
    root.mkdir(exist_ok=True)
    tmp = root / f"{name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    array = zarr.create_array(store=str(tmp), shape=features.shape, dtype="float32",
                              chunks=(min(max(len(features), 1), 65536), features.shape[1]))
    array[:] = features
    array.attrs["robot_learn_feature_cache"] = {**cache_record(store, identity, cameras),
                                                "computed_on": str(computed_on), "batch_size": int(batch_size)}
    final = root / name
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    return features


def load_or_build_feature_cache(store: EpisodeStore, name: str, identity: str, cameras: Sequence[str],
                                encode: Encode, log: Callable[[str], None] = print, batch_size: int = 256,
                                progress_bar: bool = False, computed_on: str = "cpu") -> np.ndarray:
    """The valid cache, or a new one (saying why the old one was not used)."""
    features, why, built = _read_cache(store, name, identity, cameras)
    if features is not None:
        built_on = built.get("computed_on", "cpu")
        unchecked = f"; computed on {built_on}, not re-checked on {computed_on}" if built_on != computed_on else ""
        if not unchecked:
            why = cache_matches_encoder(store, features, cameras, encode, int(built.get("batch_size", 256)))
        if unchecked or not why:
            log(f"      using cached {name} (encoder {identity}, {len(features)} frames{unchecked})")
            return features
    log(f"      building the {name} cache for encoder {identity}: {why}")
    return build_feature_cache(store, name, identity, cameras, encode, batch_size=batch_size,
                               progress_bar=progress_bar, computed_on=computed_on)
