"""Fixed-rate control loop with jitter/overrun statistics, and linear interpolation
of policy action chunks onto the loop's rate."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np


@dataclass
class LoopStats:
    """Timing of a finished loop. Periods are measured between iteration starts."""

    rate_hz: float
    periods_s: list[float] = field(default_factory=list)
    work_s: list[float] = field(default_factory=list)
    overruns: int = 0  # iterations whose work exceeded the period

    def summary(self) -> dict[str, float]:
        """Achieved rate, jitter (|period - target| p50/p95/max, ms), overruns."""
        if not self.periods_s:
            return {"iterations": len(self.work_s), "achieved_hz": 0.0, "overruns": self.overruns}
        p = np.asarray(self.periods_s)
        dev = np.abs(p - 1.0 / self.rate_hz) * 1e3
        w = np.asarray(self.work_s) * 1e3
        return {
            "iterations": len(self.work_s),
            "target_hz": self.rate_hz,
            "achieved_hz": float(1.0 / p.mean()),
            "jitter_p50_ms": float(np.percentile(dev, 50)),
            "jitter_p95_ms": float(np.percentile(dev, 95)),
            "jitter_max_ms": float(dev.max()),
            "work_p50_ms": float(np.percentile(w, 50)),
            "work_p95_ms": float(np.percentile(w, 95)),
            "overruns": self.overruns,
        }


class RateLoop:
    """Calls `step(i)` at `rate_hz` (30-100 Hz for arms) until `step` returns False,
    `iterations` are done or `stop()` is called. Deadlines are absolute, so one slow
    step does not shift the schedule; an overrun skips to the next free slot.

    `clock` (seconds, monotonic) and `sleep` default to the real ones; a simulated
    clock makes the schedule and its statistics exact, whatever the machine's load."""

    def __init__(self, rate_hz: float, clock: Callable[[], float] = time.perf_counter,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        if not 0 < rate_hz <= 1000:
            raise ValueError(f"rate_hz must be in (0, 1000], got {rate_hz}")
        self.rate_hz = rate_hz
        self.period_s = 1.0 / rate_hz
        self._clock = clock
        self._sleep = sleep
        self._stopped = False

    def stop(self) -> None:
        self._stopped = True

    def run(self, step: Callable[[int], bool | None], iterations: int | None = None,
            duration_s: float | None = None) -> LoopStats:
        stats = LoopStats(self.rate_hz)
        self._stopped = False
        clock = self._clock
        start = clock()
        next_deadline = start
        last_start = None
        i = 0
        while not self._stopped and (iterations is None or i < iterations):
            now = clock()
            if duration_s is not None and now - start >= duration_s:
                break
            if last_start is not None:
                stats.periods_s.append(now - last_start)
            last_start = now
            keep_going = step(i)
            done = clock()
            stats.work_s.append(done - now)
            i += 1
            if keep_going is False:
                break
            next_deadline += self.period_s
            if done > next_deadline:
                stats.overruns += 1
                # Skip the missed slots rather than bursting to catch up.
                missed = int((done - next_deadline) / self.period_s) + 1
                next_deadline += missed * self.period_s
            self._sleep_until(next_deadline)
        return stats

    def _sleep_until(self, deadline: float) -> None:
        # Coarse sleep, then a short spin: time.sleep alone overshoots by ~0.1-1 ms.
        while True:
            remaining = deadline - self._clock()
            if remaining <= 0:
                return
            if remaining > 0.002:
                self._sleep(remaining - 0.0015)


class ChunkInterpolator:
    """Plays an action chunk predicted at `policy_hz` at the loop's `loop_hz`,
    interpolating linearly between consecutive chunk actions.

    `set_chunk(chunk)` ([H, A]) restarts playback at the chunk's first action;
    `next()` returns the action for the next loop tick, holding the last action
    once the chunk is exhausted (`exhausted` tells the caller to query the policy)."""

    def __init__(self, policy_hz: float, loop_hz: float) -> None:
        self.policy_hz = policy_hz
        self.loop_hz = loop_hz
        self._chunk: np.ndarray | None = None
        self._tick = 0

    def set_chunk(self, chunk: np.ndarray) -> None:
        chunk = np.asarray(chunk, dtype=np.float64)
        if chunk.ndim != 2 or chunk.shape[0] < 1:
            raise ValueError(f"chunk must be [H, A] with H >= 1, got shape {chunk.shape}")
        self._chunk = chunk
        self._tick = 0

    @property
    def exhausted(self) -> bool:
        """True once playback has reached the chunk's last action."""
        if self._chunk is None:
            return True
        return self._tick * self.policy_hz / self.loop_hz >= self._chunk.shape[0] - 1

    def next(self) -> np.ndarray:
        if self._chunk is None:
            raise RuntimeError("no chunk set; call set_chunk() first")
        pos = self._tick * self.policy_hz / self.loop_hz  # position in chunk steps
        self._tick += 1
        last = self._chunk.shape[0] - 1
        if pos >= last:
            return self._chunk[last].copy()
        i = int(np.floor(pos))
        frac = pos - i
        return (1.0 - frac) * self._chunk[i] + frac * self._chunk[i + 1]
