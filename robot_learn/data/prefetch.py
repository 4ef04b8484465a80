"""``PrefetchingSampler``: draws a window sampler's next batches on a background thread.

The trainer's step then waits only for a queue, not for the sampler (``train.prefetch``
batches ahead; 0 is off). This matters where a step is short next to the sampler's
work: a GPU step, or a store read out of core. Numpy indexing and zarr's decompression
release the GIL, so the drawing overlaps the step.

Batches come out exactly as the wrapped sampler would give them, in the same order.
``state_dict()`` is the sampler's state *after the last batch handed out*, not after
the ones still queued, so a resumed run draws the same next batch as one that was
never stopped. An error in the thread (a damaged chunk, say) is raised by the
``sample()`` call that would have got that batch.
"""

from __future__ import annotations

import queue
import threading
from typing import Any

_POLL_S = 0.1


class PrefetchingSampler:
    """Wraps ``sampler`` (``sample``, ``state_dict``, ``load_state_dict``); other
    attributes are the wrapped sampler's."""

    def __init__(self, sampler: Any, depth: int = 2) -> None:
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
            raise ValueError(f"prefetch depth must be an int >= 1, got {depth!r}")
        self.sampler = sampler
        self.depth = depth
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._queue: queue.Queue = queue.Queue(maxsize=depth)
        self._state: dict[str, Any] | None = None  # the sampler's state after the last batch handed out

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["sampler"], name)

    def __len__(self) -> int:
        return len(self.sampler)

    def sample(self) -> dict[str, Any]:
        """The next batch, as ``sampler.sample()`` would give it."""
        if self._thread is None:
            self._start()
        batch, state, error = self._queue.get()
        if error is not None:
            self.close()
            raise error
        self._state = state
        return batch

    def state_dict(self) -> dict[str, Any]:
        return self._state if self._state is not None else self.sampler.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Drop the queued batches and continue from ``state``."""
        self.close()
        self.sampler.load_state_dict(state)
        self._state = None

    def close(self) -> None:
        """Stop the thread and drop what it drew ahead (``state_dict`` keeps its place)."""
        if self._thread is None:
            return
        self._stop.set()
        while self._thread.is_alive():
            try:
                self._queue.get_nowait()
            except queue.Empty:
                self._thread.join(_POLL_S)
        self._thread = None
        if self._state is not None:  # rewind the sampler to the batch not yet handed out
            self.sampler.load_state_dict(self._state)

    def _start(self) -> None:
        self._state = self.sampler.state_dict()
        self._stop.clear()
        self._queue = queue.Queue(maxsize=self.depth)
        self._thread = threading.Thread(target=self._run, name="window-prefetch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                item = (self.sampler.sample(), self.sampler.state_dict(), None)
            except Exception as error:  # handed to the consumer, which raises it
                item = (None, None, error)
            while not self._stop.is_set():
                try:
                    self._queue.put(item, timeout=_POLL_S)
                    break
                except queue.Full:
                    continue
            if item[2] is not None:
                return
