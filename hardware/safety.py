"""Safety layer applied to every arm command: limits, step and velocity clipping,
workspace bounds, an e-stop, and torque-off on exceptions, signals and exit.

All limits are in the arm's normalised units (degrees or -100..100 / 0..100).
Clipping is logged (and counted), never silent.
"""

from __future__ import annotations

import atexit
import logging
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

log = logging.getLogger(__name__)

WATCHDOG_ACTIONS = ("hold", "disable_torque")


@dataclass
class SafetyConfig:
    """Limits applied to every command.

    Attributes:
        position_limits: joint -> (low, high); joints not listed are not limited here
            (the calibration range still bounds them).
        max_relative_step: largest change from the present position per command
            (one value for all joints, or per joint); None disables.
        max_velocity: units per second; converted to a per-command step from the
            time since the previous command; None disables.
        workspace: optional predicate on the clipped target; False -> the command
            is refused and the arm holds its present position.
        watchdog_timeout_s: no command for this long -> `watchdog_action`; None disables.
        watchdog_action: "hold" (goal := present) or "disable_torque".
    """

    position_limits: dict[str, tuple[float, float]] = field(default_factory=dict)
    max_relative_step: float | dict[str, float] | None = None
    max_velocity: float | dict[str, float] | None = None
    workspace: Callable[[Mapping[str, float]], bool] | None = None
    watchdog_timeout_s: float | None = 0.5
    watchdog_action: str = "hold"

    def __post_init__(self) -> None:
        if self.watchdog_action not in WATCHDOG_ACTIONS:
            raise ValueError(f"unknown watchdog_action {self.watchdog_action!r}; "
                             f"valid actions: {', '.join(WATCHDOG_ACTIONS)}")


def _per_joint(value: float | Mapping[str, float] | None, joint: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, Mapping):
        return value.get(joint)
    return float(value)


class SafetyLayer:
    """Turns a requested target into a safe one; holds the e-stop state."""

    def __init__(self, config: SafetyConfig) -> None:
        self.config = config
        self.clip_events = 0
        self.last_events: list[str] = []
        self._last_command_time: float | None = None
        self._estop = threading.Event()

    # -- e-stop ---------------------------------------------------------------
    @property
    def estopped(self) -> bool:
        return self._estop.is_set()

    def engage_estop(self) -> None:
        self._estop.set()

    def release_estop(self) -> None:
        self._estop.clear()

    # -- filtering ------------------------------------------------------------
    def filter(self, target: Mapping[str, float], present: Mapping[str, float],
               now: float | None = None) -> dict[str, float]:
        """Clip `target` to position limits, then to the allowed step from `present`."""
        now = time.monotonic() if now is None else now
        dt = None if self._last_command_time is None else max(now - self._last_command_time, 1e-3)
        self._last_command_time = now
        cfg, events, out = self.config, [], {}
        for joint, value in target.items():
            v = float(value)
            lim = cfg.position_limits.get(joint)
            if lim is not None and not lim[0] <= v <= lim[1]:
                events.append(f"{joint}: {v:.2f} outside limits [{lim[0]:g}, {lim[1]:g}]")
                v = min(max(v, lim[0]), lim[1])
            step = _per_joint(cfg.max_relative_step, joint)
            vmax = _per_joint(cfg.max_velocity, joint)
            if vmax is not None and dt is not None:
                step = vmax * dt if step is None else min(step, vmax * dt)
            if step is not None and joint in present:
                p = float(present[joint])
                if abs(v - p) > step:
                    clipped = p + step if v > p else p - step
                    events.append(f"{joint}: step {v - p:+.2f} clipped to {clipped - p:+.2f}")
                    v = clipped
            out[joint] = v
        if cfg.workspace is not None and not cfg.workspace(out):
            events.append("target outside the workspace; holding present position")
            out = {j: float(present.get(j, v)) for j, v in out.items()}
        if events:
            self.clip_events += len(events)
            log.warning("safety: %s", "; ".join(events))
        self.last_events = events
        return out


class TorqueGuard:
    """Calls `disable` at interpreter exit and on SIGINT/SIGTERM; restores the previous
    signal handlers on `uninstall()`. Signal handlers can only be set from the main
    thread, so elsewhere only the atexit hook is installed."""

    def __init__(self, disable: Callable[[], Any]) -> None:
        self._disable = disable
        self._previous: dict[int, Any] = {}
        self._installed = False

    def _safe_disable(self) -> None:
        try:
            self._disable()
        except Exception as exc:  # noqa: BLE001 - last-resort path must never raise
            log.error("torque guard: could not disable torque: %s", exc)

    def _on_signal(self, signum: int, frame: Any) -> None:
        self._safe_disable()
        previous = self._previous.get(signum)
        if callable(previous):
            previous(signum, frame)
        elif signum == signal.SIGINT:
            raise KeyboardInterrupt
        else:
            raise SystemExit(128 + signum)

    def install(self) -> None:
        if self._installed:
            return
        atexit.register(self._safe_disable)
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._previous[sig] = signal.getsignal(sig)
                signal.signal(sig, self._on_signal)
        self._installed = True

    def uninstall(self) -> None:
        if not self._installed:
            return
        atexit.unregister(self._safe_disable)
        if threading.current_thread() is threading.main_thread():
            for sig, handler in self._previous.items():
                signal.signal(sig, handler)
        self._previous.clear()
        self._installed = False
