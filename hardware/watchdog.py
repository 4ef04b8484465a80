"""`Watchdog`: fires a callback when commands stop arriving for longer than a timeout."""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

log = logging.getLogger(__name__)


class Watchdog:
    """Background thread; `feed()` on every command. If `timeout_s` passes without a
    feed, `on_timeout()` runs once (until the next feed re-arms it)."""

    def __init__(self, timeout_s: float, on_timeout: Callable[[], None], poll_s: float | None = None) -> None:
        self.timeout_s = timeout_s
        self.on_timeout = on_timeout
        self.poll_s = poll_s if poll_s is not None else min(0.01, timeout_s / 5)
        self.fired = 0
        self._last_feed = time.monotonic()
        self._armed = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def feed(self) -> None:
        """Record that a command arrived; re-arms the watchdog."""
        self._last_feed = time.monotonic()
        self._armed = True

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="watchdog", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=1.0)
        self._thread = None

    def _run(self) -> None:
        while not self._stop.wait(self.poll_s):
            if self._armed and time.monotonic() - self._last_feed > self.timeout_s:
                self._armed = False  # fire once per starvation
                self.fired += 1
                log.warning("watchdog: no command for %.0f ms", self.timeout_s * 1e3)
                try:
                    self.on_timeout()
                except Exception as exc:  # noqa: BLE001 - keep the thread alive
                    log.error("watchdog action failed: %s", exc)
