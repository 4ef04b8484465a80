"""E-stop by key: a thread watches a terminal (or any file descriptor) for a key and
calls the stop function. The API e-stop is `ServoArm.estop()`."""

from __future__ import annotations

import os
import select
import sys
import threading
from typing import Callable


class KeyEStop:
    """Calls `on_stop()` when `key` (default space) is read from `fd` (default stdin).

    Put the terminal in cbreak mode yourself for single-key response (the CLI does);
    with a pipe, as in tests, bytes arrive as written."""

    def __init__(self, on_stop: Callable[[], None], key: str = " ", fd: int | None = None) -> None:
        self.on_stop = on_stop
        self.key = key.encode()
        self.fd = sys.stdin.fileno() if fd is None else fd
        self.triggered = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> "KeyEStop":
        self._thread = threading.Thread(target=self._run, name="key-estop", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                ready, _, _ = select.select([self.fd], [], [], 0.02)
                if not ready:
                    continue
                data = os.read(self.fd, 64)
            except (OSError, ValueError):
                return
            if not data:
                return
            if self.key in data:
                self.on_stop()
                self.triggered.set()  # after on_stop: the arm is already stopped when this is seen
