"""The single-writer lock of an episode store.

Every process that appends holds an OS advisory lock (`flock`) on
`episode_store.lock` inside the store for as long as its store is open for
appending. The kernel drops a flock when the last descriptor of it closes,
which includes the holder being killed (kill -9), so a crashed writer never
leaves a stale lock. The file stays; it only carries the holder's pid for the
error message of the next writer.

Within one process, stores opened for appending on the same path share one lock,
and with it a count of the commits made through it (a store object re-reads the
store before it appends or truncates, or saves statistics, when another of them
committed since, so they never overwrite each other's episodes). A forked child drops the share: opening the
store for appending there asks the kernel again and finds the parent's lock.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path

from robot_learn.data.errors import StoreError

LOCK_FILE = "episode_store.lock"
_POLL_S = 0.1
_log = logging.getLogger(__name__)


@dataclass
class _Held:
    fd: int
    pid: int
    count: int = 1
    # Serialises appends of the store objects sharing this lock (threads of one process).
    mutex: threading.RLock = field(default_factory=threading.RLock)
    # Commits (appends, truncations) made through this lock: only this process can write,
    # so a store object that saw fewer than this must re-read before it writes.
    writes: int = 0


_held: dict[str, _Held] = {}
_registry = threading.Lock()


class WriterLock:
    """The calling process's hold on a store's writer lock; `release()` (or garbage
    collection of this object) lets it go.

    `wait`: False raises StoreError at once if another process holds the lock;
    True waits for it; a number waits at most that many seconds."""

    def __init__(self, root: Path, wait: bool | float = False) -> None:
        wait = check_wait(wait)
        key = os.path.realpath(root)
        with _registry:
            held = _held.get(key)
            if held is not None and held.pid == os.getpid():
                held.count += 1
            else:
                held = None
        if held is None:
            # Outside the registry lock: waiting for another process must not block
            # this process's other stores from opening or closing.
            fd = _acquire(Path(root), wait)
            with _registry:
                held = _held[key] = _Held(fd, os.getpid())
        self.mutex = held.mutex
        self._held = held
        self._release = weakref.finalize(self, _release, key, held)

    @property
    def writes(self) -> int:
        """How many commits the store objects sharing this lock have made."""
        return self._held.writes

    def count_write(self) -> int:
        """Count one more commit; the new count."""
        self._held.writes += 1
        return self._held.writes

    def release(self) -> None:
        """Give up this hold (the lock itself goes when the last hold in the process does)."""
        self._release()


def check_wait(wait: object) -> bool | float:
    """`wait` as True/False or a number of seconds >= 0; StoreError for anything else."""
    if isinstance(wait, bool):
        return wait
    if isinstance(wait, (int, float)) and wait >= 0:
        return float(wait)
    raise StoreError(f"wait must be true, false or a number of seconds >= 0, got {wait!r}")


def _acquire(root: Path, wait: bool | float) -> int:
    path = root / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise StoreError(f"cannot open the writer lock {str(path)!r}: {exc.strerror}") from exc
    deadline = None if wait is True else time.monotonic() + float(wait)
    announced = False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            holder = _holder(path)
            if deadline is not None and time.monotonic() >= deadline:
                os.close(fd)
                waited = f" after waiting {float(wait):g} s" if wait else ""
                raise StoreError(
                    f"store {str(root)!r} is open for appending by another process ({holder})"
                    f"{waited}; only one writer at a time: retry when it has finished, or wait "
                    f"for it (EpisodeStore.open(..., wait=True); CLI: wait=true)") from None
            if not announced:
                _log.warning("store %r is open for appending by another process (%s); waiting "
                             "for it to finish", str(root), holder)
                announced = True
            time.sleep(_POLL_S)
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def _holder(path: Path) -> str:
    try:
        pid = path.read_text().strip()
    except OSError:
        pid = ""
    return f"pid {pid}" if pid.isdigit() else "pid unknown"


def _release(key: str, held: _Held) -> None:
    with _registry:
        if held.pid != os.getpid():
            return  # a forked child: _forget_after_fork already closed its copy
        held.count -= 1
        if held.count == 0:
            os.close(held.fd)  # the kernel drops the flock with the last descriptor
            if _held.get(key) is held:
                del _held[key]


def _forget_after_fork() -> None:
    # The child's copies of the descriptors would keep the parent's locks alive
    # after the parent closes its stores; closing them leaves the parent's lock as is.
    global _registry
    _registry = threading.Lock()
    for held in _held.values():
        try:
            os.close(held.fd)
        except OSError:
            pass
    _held.clear()


os.register_at_fork(after_in_child=_forget_after_fork)
