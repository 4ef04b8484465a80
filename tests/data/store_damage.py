"""Ways to damage an episode store on disk, for the corruption tests (here and in
tests/cli), and a snapshot to show a refused command changed nothing."""

from __future__ import annotations

import json
from pathlib import Path

from robot_learn.data.lock import LOCK_FILE


def delete(path: Path, chunk: str) -> None:
    """Remove the chunk file `chunk` (relative to the store)."""
    (path / chunk).unlink()


def truncate(path: Path, chunk: str) -> None:
    """Cut the chunk file to half its length."""
    raw = (path / chunk).read_bytes()
    (path / chunk).write_bytes(raw[:len(raw) // 2])


def flip(path: Path, chunk: str) -> None:
    """Flip four bits of the middle byte of the chunk file."""
    raw = bytearray((path / chunk).read_bytes())
    raw[len(raw) // 2] ^= 0x55
    (path / chunk).write_bytes(bytes(raw))


def short_commit(path: Path, _chunk: str = "") -> None:
    """Make the commit record claim one frame fewer than meta/episode_ends holds."""
    record = json.loads((path / "episode_store.json").read_text())
    record["num_frames"] -= 1
    (path / "episode_store.json").write_text(json.dumps(record))


def snapshot(path: Path) -> dict[str, bytes]:
    """Every file's bytes (but the lock file's, which only names the last writer's pid)."""
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*"))
            if p.is_file() and p.name != LOCK_FILE}
