"""`EpisodeStore`: episodes of robot data in one zarr v3 store.

Layout (plain zarr, readable without this code):

    zarr.json                  root group
    episode_store.json         commit record (see commit.py): episodes/frames committed + schema
    episode_store.lock         single-writer lock (see lock.py)
    data/<key>                 per-step arrays concatenated along time (data/images/front, ...)
    meta/episode_ends          int64, end frame (exclusive) of each episode
    meta/<field>               one array per per-episode field (task, source, ...)
    stats/                     group whose attributes hold saved normalisation statistics
    derived/<name>             derived per-frame data, e.g. cached frame features (feature_cache.py)

Frames and episodes beyond the commit record are leftovers of an interrupted
append or of `truncate`: they are never read and the next append overwrites them.

Crash safety also needs each chunk write to be all-or-nothing, because an append
rewrites the chunk it shares with the previous episode. zarr's LocalStore writes
chunks and metadata to a temp file and renames it into place from zarr 3.1.3 on
(zarr-python PR #3412); with older zarr, appends warn that they are not crash-safe.

One writer at a time: opening for appending takes the store's writer lock
(lock.py). Every open checks the store's integrity cheaply (integrity.py): each
committed chunk exists and the commit record agrees with meta/episode_ends;
chunks carry checksums, so a damaged one raises StoreError when read.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import warnings
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

import numpy as np
import zarr
from zarr.storage import LocalStore

from robot_learn.data import commit as _commit
from robot_learn.data import integrity
from robot_learn.data.errors import StoreError
from robot_learn.data.lock import LOCK_FILE, WriterLock
from robot_learn.data.schema import META_FIELDS, validate_meta, validate_steps
from robot_learn.data.stats import check_finite, compute_stats, stats_from_json, stats_to_json
from robot_learn.data.views import EpisodeView, select_episodes

MODES = ("r", "a")
ZARR_ATOMIC_WRITES = tuple(int(p) for p in re.findall(r"\d+", zarr.__version__)[:3]) >= (3, 1, 3)
# Images: a few frames per chunk so a random window decodes little it doesn't use.
IMAGE_CHUNK_FRAMES = 4
LOWDIM_CHUNK_FRAMES = 2048
META_CHUNK = 1024
# Derived per-frame data kept beside the episodes (the feature cache: feature_cache.py).
DERIVED_DIR = "derived"


class EpisodeStore:
    """Store of episodes (per-step arrays plus per-episode metadata), appended one at a
    time; `truncate` cuts it back.

    Make one with `EpisodeStore.create(path)`, open one with
    `EpisodeStore.open(path, mode="r" | "a")`. One writer at a time: a store open
    for appending holds the store's writer lock until `close()` (or until it is
    garbage collected, or its process ends). Readers see the episodes committed
    when they opened (or last called `refresh`)."""

    def __init__(self, path: Path, mode: str, _token: object = None,
                 _lock: WriterLock | None = None) -> None:
        if _token is not _OPEN_TOKEN:
            raise TypeError("use EpisodeStore.create(path) or EpisodeStore.open(path)")
        self.path = path
        self.mode = mode
        self._lock = _lock
        try:
            self.refresh()
            if mode == "a":
                self._check_tail_chunks()
        except BaseException:
            self.close()
            raise

    # ----------------------------------------------------------------- opening
    @classmethod
    def create(cls, path: str | os.PathLike, wait: bool | float = False) -> "EpisodeStore":
        """Create a new, empty store at `path` (an absent path or an empty directory),
        open for appending. `wait` as in `open`."""
        root = Path(path)
        _check_creatable(root)
        lock = _lock_dir(root, wait)
        try:
            _check_creatable(root)  # again under the lock: another writer may have made it
            return cls._create_locked(root, lock)
        except BaseException:
            lock.release()
            raise

    @classmethod
    def open(cls, path: str | os.PathLike, mode: str = "r", wait: bool | float = False) -> "EpisodeStore":
        """Open an existing store for reading ("r") or appending ("a").

        Appending takes the store's writer lock; if another process holds it,
        `wait=False` raises StoreError naming the holder's pid, `wait=True` waits
        for it and a number waits at most that many seconds."""
        if mode not in MODES:
            raise StoreError(f"unknown mode {mode!r}; valid modes: {', '.join(MODES)}")
        root = Path(path)
        _commit.read_commit(root)  # raises StoreError if this is not a store
        if mode == "r":
            return cls(root, mode, _OPEN_TOKEN)
        lock = WriterLock(root, wait)
        try:
            return cls._open_locked(root, lock)
        except BaseException:
            lock.release()
            raise

    @classmethod
    def open_or_create(cls, path: str | os.PathLike, wait: bool | float = False) -> "EpisodeStore":
        """The store at `path` open for appending, created first if there is none.
        Decided under the writer lock, so two processes starting together on a new
        path never both create it. `wait` as in `open`."""
        root = Path(path)
        # A lock file without a commit record is another writer creating the store right
        # now: wait for it below instead of calling the path non-empty.
        if not (root / _commit.COMMIT_FILE).exists() and not (root / LOCK_FILE).exists():
            _check_creatable(root)
        lock = _lock_dir(root, wait)
        try:
            if (root / _commit.COMMIT_FILE).exists():
                _commit.read_commit(root)
                return cls._open_locked(root, lock)
            _check_creatable(root)
            return cls._create_locked(root, lock)
        except BaseException:
            lock.release()
            raise

    @classmethod
    def _open_locked(cls, root: Path, lock: WriterLock) -> "EpisodeStore":
        # Temp files are only safe to delete while holding the lock: they may be a live writer's.
        _commit.remove_partial_files(root)
        _warn_if_writes_not_atomic()
        return cls(root, "a", _OPEN_TOKEN, lock)

    @classmethod
    def _create_locked(cls, root: Path, lock: WriterLock) -> "EpisodeStore":
        _warn_if_writes_not_atomic()
        # Not mode "w-": the lock file already lies in the directory (checked empty otherwise).
        group = zarr.open_group(store=LocalStore(root), mode="a")
        group.attrs["robot_learn"] = {"format": _commit.FORMAT, "version": _commit.VERSION,
                                      "commit_record": _commit.COMMIT_FILE}
        group.create_group("data")
        meta = group.create_group("meta")
        for name, dtype in (("episode_ends", "int64"), *((n, d) for n, (d, _) in META_FIELDS.items())):
            meta.create_array(name, shape=(0,), chunks=(META_CHUNK,), dtype=str if dtype == "str" else dtype,
                              compressors=integrity.LOWDIM_CODEC, config=integrity.ARRAY_CONFIG)
        group.create_group("stats")
        # The commit record is written last: until it exists, the path is not a store.
        _commit.write_commit(root, _commit.Commit())
        return cls(root, "a", _OPEN_TOKEN, lock)

    def close(self) -> None:
        """Release the writer lock (appending raises afterwards); reading still works."""
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def __enter__(self) -> "EpisodeStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def refresh(self) -> None:
        """Re-read the commit record and arrays (to see episodes appended by another process).
        Raises StoreError if a committed chunk is missing or the commit record and
        meta/episode_ends disagree."""
        self._commit = _commit.read_commit(self.path)
        try:
            self._group = zarr.open_group(
                store=LocalStore(self.path, read_only=self.mode == "r"),
                mode="r" if self.mode == "r" else "r+")
        except Exception as exc:  # zarr raises several types for a broken root
            raise StoreError(f"{str(self.path)!r}: cannot open the zarr root group: {exc}") from exc
        n, f = self._commit.num_episodes, self._commit.num_frames
        arrays = integrity.committed_arrays(self.path, self._group, self._commit)
        if self._commit.version >= 2:
            integrity.check_chunks_exist(self.path, arrays)
        else:
            integrity.warn_unverifiable(self.path)
        checked = {name: integrity.CheckedArray(self.path, name, arr) for name, (arr, _) in arrays.items()}
        self._meta_arrays = {name: checked[f"meta/{name}"] for name in ("episode_ends", *META_FIELDS)}
        self._data = {key: checked[f"data/{key}"] for key in (self._commit.schema or {})}
        self._episode_ends = np.asarray(self._meta_arrays["episode_ends"][:n], dtype=np.int64)
        integrity.check_consistency(self.path, n, f, self._episode_ends)
        self._meta = {name: _as_numpy(self._meta_arrays[name][:n]) for name in META_FIELDS}
        self._stats_cache: dict[str, dict[str, np.ndarray]] = {}
        self._writes_seen = self._lock.writes if self._lock is not None else 0

    def _check_tail_chunks(self) -> None:
        # The next append rewrites the chunk it shares with the last episode; decoding
        # it now refuses a damaged one before anything is written.
        f = self.num_frames
        for arr in self._data.values():
            start = f - f % arr.chunks[0]
            if start < f:
                arr[start:f]

    def verify(self) -> integrity.VerifyReport:
        """Decode every committed chunk; the report lists missing and undecodable ones."""
        return integrity.verify_store(self.path)

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
        self._check_writable()
        with self._writing():
            return self._append(steps, meta)

    def truncate(self, num_episodes: int) -> None:
        """Keep only the first `num_episodes` episodes. Nothing is copied: one new commit
        record, written atomically, and the rows past it become leftovers that the next
        append overwrites. Saved statistics and derived caches (`derived/`) go first: a
        later append could bring the store back to an extent they recorded, with other
        contents. Episodes are dropped for good, so no other process should be reading
        the store meanwhile (it would keep seeing them until it refreshes)."""
        self._check_writable()
        with self._writing():
            if isinstance(num_episodes, bool) or not isinstance(num_episodes, (int, np.integer)) \
                    or not 0 <= num_episodes <= self.num_episodes:
                raise ValueError(f"truncate: num_episodes must be an integer from 0 to {self.num_episodes} "
                                 f"(the episodes {str(self.path)!r} holds), got {num_episodes!r}")
            n = int(num_episodes)
            if n == self.num_episodes:
                return
            frames = int(self._episode_ends[n - 1]) if n else 0
            stats_group = self._group.get("stats")
            if stats_group is not None:
                stats_group.attrs.put({})
            derived = self.path / DERIVED_DIR
            try:
                if derived.exists():
                    shutil.rmtree(derived)
            except OSError as exc:
                raise StoreError(f"truncate: cannot remove the derived caches in {str(derived)!r} ({exc}); "
                                 f"nothing was cut") from None
            # Commit point: until this replace lands, the store holds every episode.
            self._commit = _commit.Commit(n, frames, self._commit.schema if n else None, self._commit.version)
            _commit.write_commit(self.path, self._commit)
            # The dropped rows go too, so that plain zarr readers see the cut (a kill before
            # this leaves them as leftovers, which nothing reads).
            for arr in self._data.values():
                arr.resize((frames, *arr.shape[1:]))
            for arr in self._meta_arrays.values():
                arr.resize((n,))
            self._episode_ends = self._episode_ends[:n]
            self._meta = {name: values[:n] for name, values in self._meta.items()}
            if n == 0:
                self._data = {}
            self._stats_cache.clear()

    def _check_writable(self) -> None:
        if self.mode != "a" or self._lock is None:
            state = "read-only" if self.mode != "a" else "closed"
            raise StoreError(f"store {str(self.path)!r} is {state}; open it with mode='a'")

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """Hold the process's write mutex, re-reading first if another store object sharing
        the lock committed since this one last looked; count the commit made inside."""
        with self._lock.mutex:
            self._refresh_if_stale()
            yield
            self._writes_seen = self._lock.count_write()

    def _refresh_if_stale(self) -> None:
        """Re-read when another store object sharing this one's writer lock committed since."""
        if self._lock is not None and self._lock.writes != self._writes_seen:
            self.refresh()

    def _append(self, steps: Mapping[str, Any], meta: Mapping[str, Any]) -> int:
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
        self._commit = _commit.Commit(n + 1, f + length, schema, self._commit.version)
        _commit.write_commit(self.path, self._commit)
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
        v1 = self._commit.version < 2  # keeps its unchecked chunks (see commit.py)
        for key, spec in schema.items():
            shape = tuple(spec["shape"])
            image = key.startswith("images/")
            frames = IMAGE_CHUNK_FRAMES if image else LOWDIM_CHUNK_FRAMES
            codec = integrity.IMAGE_CODEC if image else integrity.LOWDIM_CODEC
            arr = data.create_array(
                key, shape=(0, *shape), chunks=(frames, *shape), dtype=spec["dtype"],
                compressors=zarr.codecs.ZstdCodec(level=codec.level) if v1 else codec,
                config=integrity.ARRAY_CONFIG)
            self._data[key] = integrity.CheckedArray(self.path, f"data/{key}", arr)

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

    def array(self, key: str) -> integrity.CheckedArray:
        """The zarr array of per-step `key` (may hold uncommitted rows past num_frames),
        wrapped so that reading a damaged chunk raises StoreError naming it."""
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
        self._refresh_if_stale()  # another store object of this process committed (a truncation among them)
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
            check_finite(self.array(key), key, self.num_frames, self._episode_ends, block)

    def disk_size_bytes(self) -> int:
        """Bytes on disk under the store directory."""
        return sum(os.path.getsize(os.path.join(d, f))
                   for d, _dirs, files in os.walk(self.path) for f in files)

    def summary(self) -> str:
        """Human-readable summary (see `robot_learn.data.summarize`)."""
        from robot_learn.data.summary import summarize
        return summarize(self)


def _check_creatable(root: Path) -> None:
    if root.exists() and not root.is_dir():
        raise StoreError(f"cannot create an episode store at {str(root)!r}: it is a file")
    if root.is_dir() and any(p.name != LOCK_FILE for p in root.iterdir()):
        what = "an episode store" if (root / _commit.COMMIT_FILE).exists() else "a non-empty path"
        raise StoreError(f"cannot create an episode store at {str(root)!r}: it is already "
                         f"{what}; open it with EpisodeStore.open(path, mode='a')")


def _lock_dir(root: Path, wait: bool | float) -> WriterLock:
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create an episode store at {str(root)!r}: {exc.strerror}") from exc
    return WriterLock(root, wait)


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
