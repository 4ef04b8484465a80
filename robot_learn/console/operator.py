"""The console's side of a HITL session: :class:`ConsoleOperator`, an ``Operator``.

The console drives :class:`~robot_learn.loops.session.HITLSession` through the one
door the session opens to people, the operator protocol: each control step the
session calls :meth:`ConsoleOperator.poll`, which hands the arbiter the requests
that came from the browser since the last step (takeover, hand back, pause,
reset, e-stop as a pause), and, while a human is in control,
:meth:`ConsoleOperator.act` for the action to execute. The session records those
steps with ``intervention`` set, as for any operator.

A browser click carries no arm motion, so the human actions come from ``hands``,
another operator: in simulation the scripted :class:`SimulatedOperator` (the
expert re-planned from the scene as the policy left it), on a real arm a teleop
device operator. The hands' own takeover requests are not obeyed; they become
help requests, the flags a supervising operator answers (for the simulated
operator: its takeover rule saw a stall, a regression or the arm going off plan).

Requests are queued from the server's thread and drained by the session's thread;
every one handed over is logged with the episode step it applied at.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from robot_learn.loops.control import Mode, Request


@dataclass
class CommandRecord:
    """One console request as handed to the session's arbiter."""

    command: str               # the console's name: takeover, hand_back, pause, reset, estop
    operator: str              # who sent it ("" when unnamed)
    clicked_at: float | None   # wall-clock s of the click in the browser (when it said)
    received_at: float         # wall-clock s the server got it
    episode: int = -1          # the console's episode count when it applied (see ConsoleSession)
    step: int = -1             # the step of that episode it applied at (-1: never applied)
    applied_at: float | None = None     # wall-clock s it was handed to the arbiter
    first_human_at: float | None = None  # takeover: wall-clock s the first human action was handed to the arm
    first_human_step: int = -1           # takeover: that step


@dataclass
class StepView:
    """What the console shows of the latest step (read by the server's thread)."""

    episode: int = 0
    step: int = -1
    progress: float = 0.0
    success: bool = False
    frame: np.ndarray | None = None
    frame_seq: int = 0
    flags: list[str] = field(default_factory=list)


# Console command -> the arbiter request it becomes (an e-stop is a pause that the
# console never resumes; see ConsoleSession).
REQUESTS = {"takeover": Request.TAKEOVER, "hand_back": Request.RELEASE, "pause": Request.PAUSE,
            "reset": Request.RESET, "estop": Request.PAUSE}


class ConsoleOperator:
    """An ``Operator`` fed by the console (see the module docstring).

    ``camera``: the camera whose frames the console shows (None: the first one).
    ``on_help(reason, step)`` is called from the session's thread when the hands ask
    for help.
    """

    def __init__(self, hands: Any, operator_id: str = "console", camera: str | None = None,
                 on_help: Callable[[str, int], None] | None = None) -> None:
        self.hands = hands
        self.id = operator_id
        self.camera = camera
        self.on_help = on_help
        self.lock = threading.Lock()
        self.view = StepView()
        self.log: list[CommandRecord] = []
        self.takeovers = 0
        self.human_steps = 0
        self._inbox: queue.SimpleQueue[CommandRecord] = queue.SimpleQueue()
        self._awaiting_human: CommandRecord | None = None
        self._acting = False
        self._reasons_seen = 0

    def submit(self, record: CommandRecord) -> None:
        """Queue a console request for the next control step (any thread)."""
        if record.command not in REQUESTS:
            raise ValueError(f"unknown console command {record.command!r}; valid commands: {', '.join(REQUESTS)}")
        self._inbox.put(record)

    # ----- the Operator protocol (called by the session's thread) ---------------------
    def start_episode(self, robot: Any) -> None:
        self.hands.start_episode(robot)
        with self.lock:
            self.view.episode += 1
            self.view.step = -1
            self.view.flags = []

    def end_episode(self) -> None:
        self.hands.end_episode()
        self._acting = False

    def poll(self, obs: dict[str, Any], proposed: np.ndarray | None, mode: Mode) -> list[Request]:
        if mode is not Mode.HUMAN:
            self._acting = False
        flags = self.hands.poll(obs, proposed, mode)
        now = time.time()
        info = obs.get("info", {})
        images = obs.get("images") or {}
        with self.lock:
            view = self.view
            view.step += 1
            view.progress, view.success = float(info.get("progress", 0.0)), bool(info.get("success", False))
            if images:
                view.frame = images[self.camera] if self.camera in images else next(iter(images.values()))
                view.frame_seq += 1
            # The hands' reasons (SimulatedOperator.reasons) grow by one each time their rule fires.
            reasons = list(getattr(self.hands, "reasons", []))
            view.flags += [r for r in reasons[self._reasons_seen:] if r not in view.flags]
            self._reasons_seen = len(reasons)
            step, episode = view.step, view.episode
        requests = []
        while True:
            try:
                record = self._inbox.get_nowait()
            except queue.Empty:
                break
            record.episode, record.step, record.applied_at = episode, step, now
            if record.command == "takeover":
                self._awaiting_human = record
            with self.lock:
                self.log.append(record)
            requests.append(REQUESTS[record.command])
        # No help is asked for while a human is in control or about to be (this step's takeover).
        if Request.TAKEOVER in flags and Request.TAKEOVER not in requests and mode is not Mode.HUMAN \
                and self.on_help is not None:
            self.on_help(reasons[-1] if reasons else "help", step)
        return requests

    def act(self, obs: dict[str, Any]) -> np.ndarray:
        action = self.hands.act(obs)
        with self.lock:
            self.human_steps += 1
            if not self._acting:
                self.takeovers += 1
                self._acting = True
            if self._awaiting_human is not None:
                self._awaiting_human.first_human_at = time.time()
                self._awaiting_human.first_human_step = self.view.step
                self._awaiting_human = None
        return action
