"""Integrity of an episode store: chunk presence, chunk decoding and the agreement
of the commit record with `meta/episode_ends`.

Format-version-2 stores (see commit.py) write every chunk, all-zero ones too
(zarr skips those by default and reads them back as the fill value), and
compress with zstd's content checksum. So:
- a deleted chunk file is found on open, by one stat per committed chunk;
- a truncated or bit-flipped chunk fails to decode (zstd checks the checksum),
  and the read raises `StoreError` naming the array and the chunk;
- `verify` decodes every committed chunk (`robot-learn inspect STORE --verify`).
Version-1 stores have neither property; they open with a warning.
"""

from __future__ import annotations

import math
import os
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping

import numpy as np
import zarr
from zarr.storage import LocalStore

from robot_learn.data.commit import COMMIT_FILE, Commit, read_commit
from robot_learn.data.errors import DamagedStoreError, StoreError
from robot_learn.data.schema import META_FIELDS

# zstd with its content checksum (xxhash of the decoded bytes, checked on decode).
IMAGE_CODEC = zarr.codecs.ZstdCodec(level=1, checksum=True)  # rendered frames: ~6x smaller
LOWDIM_CODEC = zarr.codecs.ZstdCodec(level=3, checksum=True)
# Version-2 arrays are opened with this: a chunk file then exists for every chunk.
ARRAY_CONFIG = {"write_empty_chunks": True}
_VERIFY_BLOCK_BYTES = 64 << 20
_unverifiable_warned: set[str] = set()


def chunk_key(arr: zarr.Array, index: int) -> str:
    """Path, relative to the array, of chunk `index` along time (e.g. "c/3/0/0")."""
    return arr.metadata.encode_chunk_key((index,) + (0,) * (arr.ndim - 1))


def describe_chunk(name: str, arr: zarr.Array, index: int) -> str:
    """E.g. "array 'data/action' chunk 3 (file data/action/c/3/0, frames 6144..8191)"."""
    rows, unit = arr.chunks[0], "frames" if name.startswith("data/") else "episodes"
    return (f"array {name!r} chunk {index} (file {name}/{chunk_key(arr, index)}, "
            f"{unit} {index * rows}..{min((index + 1) * rows, arr.shape[0]) - 1})")


def damaged(root: Path, what: str) -> DamagedStoreError:
    """The one-line error for damage found in the store at `root`."""
    return DamagedStoreError(f"store {str(root)!r} is damaged: {what}; "
                             f"'robot-learn inspect {root} --verify' lists all damage")


def chunk_files(root: Path, name: str, arr: zarr.Array, rows: int) -> list[str]:
    """Paths of the chunk files holding rows [0, rows) of array `name`."""
    # key(i) = head + str(i) + tail: formatting is ~3x faster than zarr's encoder,
    # which matters for the per-chunk stat every open does.
    first, second = chunk_key(arr, 0), chunk_key(arr, 1)
    at = next(i for i, (a, b) in enumerate(zip(first, second)) if a != b)
    head, tail = os.path.join(root, name, first[:at]), first[at + 1:]
    return [f"{head}{i}{tail}" for i in range(math.ceil(rows / arr.chunks[0]))]


def missing_chunks(root: Path, name: str, arr: zarr.Array, rows: int) -> list[int]:
    """Indices of the chunks holding rows [0, rows) whose file does not exist."""
    return [i for i, path in enumerate(chunk_files(root, name, arr, rows)) if not os.path.isfile(path)]


def check_chunks_exist(root: Path, arrays: dict[str, tuple[zarr.Array, int]]) -> None:
    """StoreError naming the first missing chunk of `arrays` ({name: (array, committed rows)})."""
    for name, (arr, rows) in arrays.items():
        gone = missing_chunks(root, name, arr, rows)
        if gone:
            more = f" ({len(gone) - 1} more chunks of it are missing)" if len(gone) > 1 else ""
            raise damaged(root, f"{describe_chunk(name, arr, gone[0])} is missing{more}")


def consistency_problem(num_episodes: int, num_frames: int, episode_ends: np.ndarray) -> str | None:
    """Where the commit record and meta/episode_ends disagree, if they do: the ends
    must be positive, strictly increasing, and the last one the committed frame count."""
    if num_episodes == 0:
        return None
    steps = np.diff(np.concatenate([[0], episode_ends]))
    if (steps <= 0).any():
        i = int(np.argmax(steps <= 0))
        return (f"meta/episode_ends is not strictly increasing at episode {i} (ends "
                f"{', '.join(map(str, episode_ends[max(0, i - 1):i + 1]))}); a chunk of it may be damaged")
    if int(episode_ends[-1]) != num_frames:
        return (f"the commit record ({COMMIT_FILE}) says {num_frames} frames but "
                f"meta/episode_ends ends at {int(episode_ends[-1])} (episode {num_episodes - 1})")
    return None


def check_consistency(root: Path, num_episodes: int, num_frames: int, episode_ends: np.ndarray) -> None:
    """StoreError naming the disagreement `consistency_problem` finds."""
    problem = consistency_problem(num_episodes, num_frames, episode_ends)
    if problem:
        raise DamagedStoreError(f"store {str(root)!r} is inconsistent: {problem}")


def warn_unverifiable(root: Path) -> None:
    """Warn once per store and process that a version-1 store cannot be verified."""
    key = os.path.realpath(root)
    if key not in _unverifiable_warned:
        _unverifiable_warned.add(key)
        warnings.warn(f"episode store {str(root)!r} was written before chunk checksums (format "
                      "version 1): missing or damaged chunks may read as zeros or wrong values "
                      "and cannot be detected; copy its episodes into a new store to add them",
                      stacklevel=4)


def first_bad_chunk(arr: zarr.Array, lo: int, hi: int) -> tuple[int, Exception] | None:
    """(index, error) of the first chunk overlapping rows [lo, hi) that fails to decode."""
    rows = arr.chunks[0]
    for i in range(lo // rows, math.ceil(min(hi, arr.shape[0]) / rows)):
        try:
            arr[i * rows:min((i + 1) * rows, arr.shape[0])]
        except Exception as exc:  # noqa: BLE001 - codecs raise RuntimeError, ValueError, ...
            return i, exc
    return None


class CheckedArray:
    """A zarr array whose reads and writes raise StoreError naming the chunk that
    fails to decode, instead of the codec's bare error. Other attributes pass through."""

    def __init__(self, root: Path, name: str, arr: zarr.Array) -> None:
        self._root, self._name, self._arr = root, name, arr

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._arr, attr)

    def __len__(self) -> int:
        return self._arr.shape[0]

    def __getitem__(self, selection: Any) -> Any:
        with self._checked(selection):
            return self._arr[selection]

    def __setitem__(self, selection: Any, values: Any) -> None:
        with self._checked(selection):
            self._arr[selection] = values

    @property
    def oindex(self) -> "_CheckedOIndex":
        return _CheckedOIndex(self)

    @property
    def zarr_array(self) -> zarr.Array:
        """The wrapped zarr array."""
        return self._arr

    @contextmanager
    def _checked(self, selection: Any) -> Iterator[None]:
        try:
            yield
        except StoreError:
            raise
        except Exception as exc:
            lo, hi = _row_span(selection, self._arr.shape[0])
            bad = first_bad_chunk(self._arr, lo, hi)
            if bad is None:
                raise
            index, error = bad
            raise damaged(self._root, f"{describe_chunk(self._name, self._arr, index)} "
                                      f"does not decode ({_one_line(error)})") from exc


class _CheckedOIndex:
    def __init__(self, checked: CheckedArray) -> None:
        self._checked = checked

    def __getitem__(self, selection: Any) -> Any:
        with self._checked._checked(selection):
            return self._checked.zarr_array.oindex[selection]


def _row_span(selection: Any, n: int) -> tuple[int, int]:
    """Rows [lo, hi) a selection touches along axis 0 (all rows when unclear)."""
    first = selection[0] if isinstance(selection, tuple) and selection else selection
    if isinstance(first, slice):
        start, stop, _ = first.indices(n)
        return start, max(start, stop)
    if isinstance(first, (int, np.integer)):
        return int(first) % max(n, 1), int(first) % max(n, 1) + 1
    idx = np.asarray(first)
    if idx.dtype.kind in "iu" and idx.size:
        return int(idx.min()), int(idx.max()) + 1
    return 0, n


def _one_line(error: Exception) -> str:
    return " ".join(f"{type(error).__name__}: {error}".split())


@dataclass
class VerifyReport:
    """What `verify` decoded and the damage it found (one line per problem)."""

    arrays: int = 0
    chunks: int = 0
    decoded_bytes: int = 0
    disk_bytes: int = 0
    seconds: float = 0.0
    version: int = 2
    problems: list[str] = field(default_factory=list)
    damaged_arrays: set[str] = field(default_factory=set)

    @property
    def mb_per_s(self) -> float:
        """Decoded MB per second."""
        return self.decoded_bytes / 1e6 / max(self.seconds, 1e-9)


def verify(root: Path, arrays: dict[str, tuple[zarr.Array, int]], check_missing: bool) -> VerifyReport:
    """Decode every committed chunk of `arrays` ({name: (array, committed rows)}) and
    report each missing (when `check_missing`) or undecodable chunk."""
    report = VerifyReport()
    t0 = time.perf_counter()
    for name, (arr, rows) in arrays.items():
        report.arrays += 1
        n_chunks = math.ceil(rows / arr.chunks[0])
        report.chunks += n_chunks
        files = chunk_files(root, name, arr, rows)
        present = [os.path.isfile(path) for path in files]
        report.disk_bytes += sum(os.path.getsize(path) for path, ok in zip(files, present) if ok)
        if check_missing and not all(present):
            report.damaged_arrays.add(name)
            report.problems += [f"{describe_chunk(name, arr, i)} is missing"
                                for i, ok in enumerate(present) if not ok]
        row_bytes = max(1, int(np.prod(arr.shape[1:], dtype=np.int64)) * arr.dtype.itemsize)
        block = max(arr.chunks[0], _VERIFY_BLOCK_BYTES // row_bytes // arr.chunks[0] * arr.chunks[0])
        for lo in range(0, rows, block):
            hi = min(lo + block, math.ceil(rows / arr.chunks[0]) * arr.chunks[0], arr.shape[0])
            try:
                report.decoded_bytes += _nbytes(arr[lo:hi])
            except Exception:  # noqa: BLE001 - find which chunks of the block fail
                for i in range(lo // arr.chunks[0], math.ceil(hi / arr.chunks[0])):
                    bad = first_bad_chunk(arr, i * arr.chunks[0], (i + 1) * arr.chunks[0])
                    if bad is not None:
                        report.damaged_arrays.add(name)
                        report.problems.append(f"{describe_chunk(name, arr, i)} does not "
                                               f"decode ({_one_line(bad[1])})")
    report.seconds = time.perf_counter() - t0
    return report


def _nbytes(values: np.ndarray) -> int:
    if values.dtype.kind in "TUO":  # variable-length strings: count their UTF-8 bytes
        return sum(len(str(v).encode()) for v in values.tolist())
    return int(values.nbytes)


def committed_arrays(root: Path, group: zarr.Group,
                     commit: Commit) -> dict[str, tuple[zarr.Array, int]]:
    """{name: (array, committed rows)} of every array the commit record covers;
    StoreError if one is missing, short, or does not match the schema."""
    wanted: dict[str, tuple[int, Mapping[str, Any] | None]] = {
        f"meta/{name}": (commit.num_episodes, None) for name in ("episode_ends", *META_FIELDS)}
    wanted.update({f"data/{key}": (commit.num_frames, spec) for key, spec in (commit.schema or {}).items()})
    out = {}
    for name, (rows, spec) in wanted.items():
        try:
            arr = group[name]
        except (KeyError, FileNotFoundError) as exc:
            raise StoreError(f"store {str(root)!r} is missing array {name!r}") from exc
        except Exception as exc:  # zarr raises several types for a garbage zarr.json
            raise StoreError(f"store {str(root)!r}: array {name!r} has unreadable metadata "
                             f"({name}/zarr.json): {exc}") from exc
        if not isinstance(arr, zarr.Array):
            raise StoreError(f"store {str(root)!r}: {name!r} is a group, expected an array")
        if arr.shape[0] < rows:
            raise StoreError(f"store {str(root)!r}: array {name!r} has {arr.shape[0]} rows, "
                             f"but the commit record says {rows}")
        if spec is not None and (list(arr.shape[1:]) != list(spec["shape"])
                                 or str(arr.dtype) != spec["dtype"]):
            raise StoreError(f"store {str(root)!r}: array {name!r} has per-step shape "
                             f"{arr.shape[1:]} dtype {arr.dtype}, schema says "
                             f"{tuple(spec['shape'])} {spec['dtype']}")
        out[name] = (arr.with_config(ARRAY_CONFIG), rows)
    return out


def verify_store(path: str | os.PathLike) -> VerifyReport:
    """Check a store without opening it as an EpisodeStore (so damage that stops
    `open` is reported too): decode every committed chunk, look for missing ones
    (format version 2) and check the commit record against meta/episode_ends.
    StoreError only if `path` is not a store or its arrays cannot be opened."""
    root = Path(path)
    commit = read_commit(root)
    try:
        group = zarr.open_group(store=LocalStore(root, read_only=True), mode="r")
    except Exception as exc:  # zarr raises several types for a broken root
        raise StoreError(f"{str(root)!r}: cannot open the zarr root group: {exc}") from exc
    arrays = committed_arrays(root, group, commit)
    report = verify(root, arrays, check_missing=commit.version >= 2)
    report.version = commit.version
    if "meta/episode_ends" not in report.damaged_arrays:
        ends, n = arrays["meta/episode_ends"][0], commit.num_episodes
        problem = consistency_problem(n, commit.num_frames, np.asarray(ends[:n], dtype=np.int64))
        if problem:
            report.problems.append(problem)
    return report
