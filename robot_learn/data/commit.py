"""The store's commit record: one small JSON file replaced atomically.

An append writes its data and meta arrays first and this file last. The file
says how many episodes and frames are committed; readers ignore anything in the
arrays beyond that, and the next append overwrites it. `os.replace` of a fully
written, fsynced temp file in the same directory is atomic on POSIX, so a
process killed at any moment leaves either the old or the new record.

Format versions (both are read):
1. chunks without checksums; all-zero chunks are not written (zarr's default),
   so a missing chunk file cannot be told from damage;
2. every chunk is written and carries zstd's content checksum (see integrity.py).
A store keeps the version it was created with: appending to a version-1 store
writes version-1 chunks.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from robot_learn.data.errors import StoreError

COMMIT_FILE = "episode_store.json"
FORMAT = "robot_learn.episode_store"
VERSION = 2
READ_VERSIONS = (1, 2)
_TMP_SUFFIX = ".tmp"


@dataclass
class Commit:
    """Committed extent of the store and the per-step schema (None before the first episode)."""

    num_episodes: int = 0
    num_frames: int = 0
    schema: dict[str, dict[str, Any]] | None = field(default=None)
    version: int = VERSION

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "version": self.version, "num_episodes": self.num_episodes,
                "num_frames": self.num_frames, "schema": self.schema}


def read_commit(root: Path) -> Commit:
    """Read the commit record, raising StoreError if `root` is not an episode store."""
    if not root.exists():
        raise StoreError(f"no episode store at {str(root)!r}: the path does not exist")
    if not root.is_dir():
        raise StoreError(f"{str(root)!r} is a file, not an episode store directory")
    path = root / COMMIT_FILE
    if not path.is_file():
        raise StoreError(f"{str(root)!r} is not an episode store (no {COMMIT_FILE}); "
                         "make one with EpisodeStore.create(path)")
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise StoreError(f"unreadable commit record {str(path)!r}: {exc}") from exc
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise StoreError(f"{str(path)!r} is not an episode store commit record "
                         f"(format {record.get('format') if isinstance(record, dict) else None!r}, "
                         f"expected {FORMAT!r})")
    version = record.get("version")
    if version not in READ_VERSIONS:
        raise StoreError(f"{str(path)!r}: episode store version {version!r} is not supported; "
                         f"this code reads versions {', '.join(map(str, READ_VERSIONS))}")
    try:
        commit = Commit(int(record["num_episodes"]), int(record["num_frames"]), record["schema"],
                        version)
    except (KeyError, TypeError, ValueError) as exc:
        raise StoreError(f"{str(path)!r}: damaged commit record ({type(exc).__name__}: "
                         f"{exc})") from None
    if commit.num_episodes < 0 or commit.num_frames < commit.num_episodes \
            or (commit.num_episodes > 0) != (commit.schema is not None):
        raise StoreError(f"{str(path)!r}: damaged commit record ({commit.num_episodes} "
                         f"episodes, {commit.num_frames} frames, schema "
                         f"{'set' if commit.schema is not None else 'none'})")
    return commit


def write_commit(root: Path, commit: Commit) -> None:
    """Atomically replace the commit record (temp file, fsync, os.replace, fsync dir)."""
    tmp = root / f"{COMMIT_FILE}.{os.getpid()}{_TMP_SUFFIX}"
    with open(tmp, "w") as f:
        json.dump(commit.to_json(), f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, root / COMMIT_FILE)
    dir_fd = os.open(root, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def remove_partial_files(root: Path) -> int:
    """Delete temp files a killed writer left behind: ours and zarr's `*.partial`
    chunk/metadata temps (zarr's LocalStore writes to a temp name, then renames).
    Returns how many were removed."""
    removed = 0
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            if name.endswith(".partial") or (name.startswith(COMMIT_FILE + ".")
                                             and name.endswith(_TMP_SUFFIX)):
                os.unlink(os.path.join(dirpath, name))
                removed += 1
    return removed
