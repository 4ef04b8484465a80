"""`EpisodeStore`: episodes of robot data in one zarr v3 store.

Layout (plain zarr, readable without this code):

    zarr.json                  root group
    episode_store.json         commit record (see commit.py): episodes/frames committed + schema
    data/<key>                 per-step arrays concatenated along time (data/images/front, ...)
    meta/episode_ends          int64, end frame (exclusive) of each episode
    meta/<field>               one array per per-episode field (task, source, ...)
    stats/                     group whose attributes hold saved normalisation statistics

Frames and episodes beyond the commit record are leftovers of an interrupted
append: they are never read and the next append overwrites them.

Crash safety also needs each chunk write to be all-or-nothing, because an append
rewrites the chunk it shares with the previous episode. zarr's LocalStore writes
chunks and metadata to a temp file and renames it into place from zarr 3.1.3 on
(zarr-python PR #3412); with older zarr, appends warn that they are not crash-safe.
"""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import zarr
from zarr.storage import LocalStore

from robot_learn.data import commit as _commit
from robot_learn.data.errors import StoreError
from robot_learn.data.schema import META_FIELDS, validate_meta, validate_steps
from robot_learn.data.stats import compute_stats, stats_from_json, stats_to_json
from robot_learn.data.views import EpisodeView, select_episodes

MODES = ("r", "a")
ZARR_ATOMIC_WRITES = tuple(int(p) for p in re.findall(r"\d+", zarr.__version__)[:3]) >= (3, 1, 3)
# Images: a few frames per chunk so a random window decodes little it doesn't use.
IMAGE_CHUNK_FRAMES = 4
LOWDIM_CHUNK_FRAMES = 2048
META_CHUNK = 1024
_IMAGE_CODEC = zarr.codecs.ZstdCodec(level=1)  # rendered frames: ~6x smaller, fast to decode
_LOWDIM_CODEC = zarr.codecs.ZstdCodec(level=3)


class EpisodeStore:
    """Append-only store of episodes (per-step arrays plus per-episode metadata).

    Make one with `EpisodeStore.create(path)`, open one with
    `EpisodeStore.open(path, mode="r" | "a")`. One writer at a time; readers
    see the episodes committed when they opened (or last called `refresh`)."""

    def __init__(self, path: Path, mode: str, _token: object = None) -> None:
        if _token is not _OPEN_TOKEN:
            raise TypeError("use EpisodeStore.create(path) or EpisodeStore.open(path)")
        self.path = path
        self.mode = mode
        self.refresh()

    # ----------------------------------------------------------------- opening
    @classmethod
    def create(cls, path: str | os.PathLike) -> "EpisodeStore":
        """Create a new, empty store at `path` (an absent path or an empty directory)."""
        root = Path(path)
        if root.exists() and (not root.is_dir() or any(root.iterdir())):
            what = "an episode store" if (root / _commit.COMMIT_FILE).exists() else "a non-empty path"
            raise StoreError(f"cannot create an episode store at {str(root)!r}: it is already "
                             f"{what}; open it with EpisodeStore.open(path, mode='a')")
        _warn_if_writes_not_atomic()
        group = zarr.open_group(store=LocalStore(root), mode="w-")
        group.attrs["robot_learn"] = {"format": _commit.FORMAT, "version": _commit.VERSION,
                                      "commit_record": _commit.COMMIT_FILE}
        group.create_group("data")
        meta = group.create_group("meta")
        meta.create_array("episode_ends", shape=(0,), chunks=(META_CHUNK,), dtype="int64")
        for name, (dtype, _default) in META_FIELDS.items():
            meta.create_array(name, shape=(0,), chunks=(META_CHUNK,),
                              dtype=str if dtype == "str" else dtype)
        group.create_group("stats")
        # The commit record is written last: until it exists, the path is not a store.
        _commit.write_commit(root, _commit.Commit())
        return cls(root, "a", _OPEN_TOKEN)

    @classmethod
    def open(cls, path: str | os.PathLike, mode: str = "r") -> "EpisodeStore":
        """Open an existing store for reading ("r") or appending ("a")."""
        if mode not in MODES:
            raise StoreError(f"unknown mode {mode!r}; valid modes: {', '.join(MODES)}")
        root = Path(path)
        _commit.read_commit(root)  # raises StoreError if this is not a store
        if mode == "a":
            _commit.remove_partial_files(root)
            _warn_if_writes_not_atomic()
        return cls(root, mode, _OPEN_TOKEN)

    def refresh(self) -> None:
        """Re-read the commit record and arrays (to see episodes appended by another process)."""
        self._commit = _commit.read_commit(self.path)
        try:
            self._group = zarr.open_group(
                store=LocalStore(self.path, read_only=self.mode == "r"),
                mode="r" if self.mode == "r" else "r+")
        except Exception as exc:  # zarr raises several types for a broken root
            raise StoreError(f"{str(self.path)!r}: cannot open the zarr root group: {exc}") from exc
        n, f = self._commit.num_episodes, self._commit.num_frames
        self._meta_arrays = {name: self._array(f"meta/{name}", n)
                             for name in ("episode_ends", *META_FIELDS)}
        self._data = {key: self._array(f"data/{key}", f, spec)
                      for key, spec in (self._commit.schema or {}).items()}
        self._episode_ends = np.asarray(self._meta_arrays["episode_ends"][:n], dtype=np.int64)
        self._meta = {name: _as_numpy(self._meta_arrays[name][:n]) for name in META_FIELDS}
        self._stats_cache: dict[str, dict[str, np.ndarray]] = {}

    def _array(self, name: str, min_len: int, spec: Mapping[str, Any] | None = None) -> zarr.Array:
        try:
            arr = self._group[name]
        except (KeyError, FileNotFoundError) as exc:
            raise StoreError(f"store {str(self.path)!r} is missing array {name!r}") from exc
        if not isinstance(arr, zarr.Array):
            raise StoreError(f"store {str(self.path)!r}: {name!r} is a group, expected an array")
        if arr.shape[0] < min_len:
            raise StoreError(f"store {str(self.path)!r}: array {name!r} has {arr.shape[0]} rows, "
                             f"but the commit record says {min_len}")
        if spec is not None and (list(arr.shape[1:]) != list(spec["shape"])
                                 or str(arr.dtype) != spec["dtype"]):
            raise StoreError(f"store {str(self.path)!r}: array {name!r} has per-step shape "
                             f"{arr.shape[1:]} dtype {arr.dtype}, schema says "
                             f"{tuple(spec['shape'])} {spec['dtype']}")
        return arr

    # -------------------------------------------------------------- properties
    @property
    def num_episodes(self) -> int:
        """Number of committed episodes."""
        return self._commit.num_episodes

    @property
    def num_frames(self) -> int:
        """Number of committed steps over all episodes."""
        return self._commit.num_frames

    @property
    def keys(self) -> tuple[str, ...]:
        """Per-step keys (empty before the first episode)."""
        return tuple(sorted(self._commit.schema or {}))

    @property
    def schema(self) -> dict[str, dict[str, Any]]:
        """Per-step key -> {"dtype", "shape"} (per-step shape, without T)."""
        return {k: dict(v) for k, v in (self._commit.schema or {}).items()}

    @property
    def episode_ends(self) -> np.ndarray:
        """End frame (exclusive) of each committed episode."""
        return self._episode_ends.copy()

    @property
    def episode_starts(self) -> np.ndarray:
        """Start frame of each committed episode."""
        return np.concatenate([[0], self._episode_ends[:-1]]).astype(np.int64)

    @property
    def meta(self) -> dict[str, np.ndarray]:
        """Per-episode metadata, one numpy array per field (strings as unicode arrays)."""
        return {k: v.copy() for k, v in self._meta.items()}

    def __len__(self) -> int:
        return self.num_episodes

    def __repr__(self) -> str:
        return (f"EpisodeStore({str(self.path)!r}, mode={self.mode!r}, "
                f"episodes={self.num_episodes}, frames={self.num_frames})")

    # ----------------------------------------------------------------- writing
    def append_episode(self, steps: Mapping[str, Any], meta: Mapping[str, Any]) -> int:
        """Append one episode atomically and return its index.

        `steps` maps per-step keys to arrays with a common length T; `meta` holds
        the per-episode fields. All checks run before anything is written."""
        if self.mode != "a":
            raise StoreError(f"store {str(self.path)!r} is open read-only; open it with mode='a'")
        length, arrays, schema = validate_steps(steps, self._commit.schema)
        row = validate_meta(meta)
        n, f = self._commit.num_episodes, self._commit.num_frames
        if n == 0:
            self._create_data_arrays(schema)
        for key, values in arrays.items():
            arr = self._data[key]
            arr.resize((f + length, *values.shape[1:]))
            arr[f:f + length] = values
        for name, arr in self._meta_arrays.items():
            arr.resize((n + 1,))
            arr[n] = f + length if name == "episode_ends" else row[name]
        # Commit point: until this replace lands, the episode does not exist.
        _commit.write_commit(self.path, _commit.Commit(n + 1, f + length, schema))
        self._commit = _commit.Commit(n + 1, f + length, schema)
        self._episode_ends = np.append(self._episode_ends, f + length)
        for name in META_FIELDS:
            self._meta[name] = np.append(self._meta[name], row[name])
        self._stats_cache.clear()
        return n

    def _create_data_arrays(self, schema: Mapping[str, Mapping[str, Any]]) -> None:
        # Before the first commit the data group may hold arrays of a killed first
        # append with another schema: start it afresh.
        data = self._group.create_group("data", overwrite=True)
        self._data = {}
        for key, spec in schema.items():
            shape = tuple(spec["shape"])
            image = key.startswith("images/")
            frames = IMAGE_CHUNK_FRAMES if image else LOWDIM_CHUNK_FRAMES
            self._data[key] = data.create_array(
                key, shape=(0, *shape), chunks=(frames, *shape), dtype=spec["dtype"],
                compressors=_IMAGE_CODEC if image else _LOWDIM_CODEC)

    # ----------------------------------------------------------------- reading
    def episode_range(self, index: int) -> tuple[int, int]:
        """(start, end) frames of episode `index`."""
        index = self._check_index(index)
        start = int(self._episode_ends[index - 1]) if index > 0 else 0
        return start, int(self._episode_ends[index])

    def read(self, key: str, start: int = 0, end: int | None = None) -> np.ndarray:
        """Committed frames [start, end) of per-step array `key`."""
        arr = self.array(key)
        end = self.num_frames if end is None else min(end, self.num_frames)
        return arr[start:end]

    def array(self, key: str) -> zarr.Array:
        """The underlying zarr array of per-step `key` (may hold uncommitted rows past num_frames)."""
        if key not in self._data:
            raise StoreError(f"unknown key {key!r}; store keys: {', '.join(self.keys) or '(none yet)'}")
        return self._data[key]

    def episode(self, index: int) -> dict[str, dict[str, Any]]:
        """All steps and the metadata of one episode: {"steps": {key: array}, "meta": {...}}."""
        start, end = self.episode_range(index)
        steps = {key: arr[start:end] for key, arr in self._data.items()}
        meta = {name: self._meta[name][index].item() for name in META_FIELDS}
        return {"steps": steps, "meta": meta}

    def _check_index(self, index: int) -> int:
        if isinstance(index, (bool, np.bool_)) or not isinstance(index, (int, np.integer)):
            raise StoreError(f"episode index must be an int, got {index!r}")
        if not -self.num_episodes <= index < self.num_episodes:
            raise StoreError(f"episode index {index} out of range; store has "
                             f"{self.num_episodes} episodes")
        return int(index) % self.num_episodes

    # ------------------------------------------------------------ views, stats
    def view(self, **filters: Any) -> EpisodeView:
        """Episodes whose metadata match all filters (source=, round=, success=, task=;
        each a value or a list of values)."""
        return EpisodeView(self, select_episodes(self._meta, **filters))

    def stats(self, keys: Iterable[str]) -> dict[str, dict[str, np.ndarray]]:
        """Normalisation statistics per feature dim of each key: min, max, mean, std,
        q01, q99 (float32). Computed once and saved in the store; recomputed when
        episodes were appended since."""
        keys = [keys] if isinstance(keys, str) else list(keys)
        stats_group = (self._group.require_group("stats") if self.mode == "a"
                       else self._group.get("stats"))
        saved = dict(stats_group.attrs) if stats_group is not None else {}
        out: dict[str, dict[str, np.ndarray]] = {}
        to_save: dict[str, Any] = {}
        for key in keys:
            self.array(key)
            record = saved.get(key)
            if key in self._stats_cache:
                out[key] = self._stats_cache[key]
            elif record and record.get("num_frames") == self.num_frames \
                    and record.get("num_episodes") == self.num_episodes:
                out[key] = stats_from_json(record)
            else:
                self.check_finite([key])  # NaN stats would silently poison every normaliser
                out[key] = compute_stats(self.read(key))
                to_save[key] = stats_to_json(out[key], self.num_episodes, self.num_frames)
            self._stats_cache[key] = out[key]
        if to_save and self.mode == "a":
            stats_group.attrs.update(to_save)
        return {k: {s: v.copy() for s, v in d.items()} for k, d in out.items()}

    def check_finite(self, keys: Sequence[str] | None = None, block: int = 65536) -> None:
        """Raise StoreError naming the key, episode, step and dim of the first NaN/Inf.
        Integer, bool and image keys cannot hold either and are skipped."""
        keys = self.keys if keys is None else ([keys] if isinstance(keys, str) else list(keys))
        for key in keys:
            arr = self.array(key)
            if arr.dtype.kind != "f":
                continue
            for start in range(0, self.num_frames, block):
                chunk = arr[start:min(start + block, self.num_frames)]
                bad = ~np.isfinite(chunk)
                if not bad.any():
                    continue
                where = np.argwhere(bad)[0]
                frame = start + int(where[0])
                ep = int(np.searchsorted(self._episode_ends, frame, side="right"))
                step = frame - self.episode_range(ep)[0]
                dim = tuple(int(i) for i in where[1:])
                raise StoreError(
                    f"non-finite value {chunk[tuple(where)]} in {key!r} at episode {ep}, "
                    f"step {step} (frame {frame}{', dim ' + str(dim if len(dim) > 1 else dim[0]) if dim else ''})")

    def disk_size_bytes(self) -> int:
        """Bytes on disk under the store directory."""
        return sum(os.path.getsize(os.path.join(d, f))
                   for d, _dirs, files in os.walk(self.path) for f in files)

    def summary(self) -> str:
        """Human-readable summary (see `robot_learn.data.summarize`)."""
        from robot_learn.data.summary import summarize
        return summarize(self)


def _warn_if_writes_not_atomic() -> None:
    if not ZARR_ATOMIC_WRITES:
        warnings.warn(f"zarr {zarr.__version__} writes chunks in place; an append killed midway "
                      "can damage the last committed episode (use zarr>=3.1.3)", stacklevel=3)


def _as_numpy(values: np.ndarray) -> np.ndarray:
    # zarr returns variable-length strings as numpy StringDType; plain unicode
    # arrays compare, print and serialise everywhere.
    values = np.asarray(values)
    if values.dtype.kind in "TUO":
        return np.array(values.tolist(), dtype=str) if len(values) else np.array([], dtype="<U1")
    return values


_OPEN_TOKEN = object()
