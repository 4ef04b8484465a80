"""Who controls the robot: the session's state machine and its arbitration rules.

Modes: ``AUTONOMOUS`` (the policy acts), ``HUMAN`` (an operator acts), ``PAUSED``
(nothing is sent; the session stops safely) and ``RESET`` (the scene is being
reset between episodes). Operators and the session submit :class:`Request` s;
once per control step :meth:`ControlArbiter.step` applies them in priority order
takeover > human control > reset > policy (HELP, METHODS.md section 4):

- a takeover wins over a reset asked for in the same step, and over the policy;
- while a human is in control a reset request waits until the human releases;
- during ``RESET`` a takeover is queued (not lost) and applies when the reset is done;
- ``PAUSE`` (a fault, e.g. a device disconnect) applies at once from any mode;
  only ``RESUME`` leaves ``PAUSED``, back to the policy.
Requests that mean nothing in the current mode (a release while the policy drives)
are dropped and listed in :attr:`ControlArbiter.dropped`.
"""

from __future__ import annotations

from collections import deque
from enum import Enum


class Mode(str, Enum):
    """The session's control mode."""

    AUTONOMOUS = "autonomous"
    HUMAN = "human"
    PAUSED = "paused"
    RESET = "reset"


class Request(str, Enum):
    """What an operator (or the session) asks of the arbiter."""

    TAKEOVER = "takeover"
    RELEASE = "release"
    RESET = "reset"
    RESET_DONE = "reset_done"
    PAUSE = "pause"
    RESUME = "resume"


# Lower number = handled first within one step.
_PRIORITY = {Request.PAUSE: 0, Request.RESUME: 1, Request.RESET_DONE: 2, Request.TAKEOVER: 3,
             Request.RELEASE: 4, Request.RESET: 5}


class ControlArbiter:
    """The control state machine (see the module docstring)."""

    def __init__(self, mode: Mode = Mode.AUTONOMOUS) -> None:
        self.mode = Mode(mode)
        self.pending: deque[Request] = deque()
        self.dropped: list[tuple[Mode, Request]] = []
        self.history: list[Mode] = []

    def submit(self, request: Request | str) -> None:
        """Queue a request; it takes effect at the next :meth:`step`."""
        try:
            self.pending.append(Request(request))
        except ValueError:
            raise ValueError(f"unknown control request {request!r}; valid requests: "
                             f"{', '.join(r.value for r in Request)}") from None

    def force(self, mode: Mode) -> None:
        """Set the mode directly, keeping queued requests: used by the session at
        episode boundaries (the episode is over whoever was in control)."""
        self.mode = Mode(mode)

    def step(self) -> Mode:
        """Apply the queued requests by priority and return the mode for this step."""
        queue = sorted(self.pending, key=lambda r: _PRIORITY[r])
        self.pending.clear()
        keep: list[Request] = []
        for request in queue:
            if not self._apply(request):
                keep.append(request)
        self.pending.extend(keep)
        self.history.append(self.mode)
        return self.mode

    def _apply(self, request: Request) -> bool:
        """Apply one request; False means it stays queued for a later step."""
        mode = self.mode
        if request is Request.PAUSE:
            self.mode = Mode.PAUSED
            return True
        if mode is Mode.PAUSED:
            if request is Request.RESUME:
                self.mode = Mode.AUTONOMOUS
                return True
            return request is Request.RELEASE  # a release while paused is moot; others wait
        if request is Request.RESUME:
            self.dropped.append((mode, request))
            return True
        if mode is Mode.RESET:
            if request is Request.RESET_DONE:
                self.mode = Mode.AUTONOMOUS
                return True
            if request is Request.RESET:
                return True  # already resetting
            return False  # takeover (and release) wait for the reset to finish
        if request is Request.RESET_DONE:
            self.dropped.append((mode, request))
            return True
        if request is Request.TAKEOVER:
            self.mode = Mode.HUMAN
            return True
        if request is Request.RELEASE:
            if mode is Mode.HUMAN:
                self.mode = Mode.AUTONOMOUS
            else:
                self.dropped.append((mode, request))
            return True
        if request is Request.RESET:
            if mode is Mode.HUMAN:
                return False  # human control outranks a reset: wait for the release
            self.mode = Mode.RESET
            return True
        raise AssertionError(request)  # every Request is handled above
