"""One robot on the console: :class:`ConsoleSession` runs a HITL session on its own thread.

The thread builds the robot and the policy (a simulator's GL context belongs to the
thread that made it), then runs :meth:`HITLSession.run_episode` with seeds
``seed, seed + 1, ...`` into the session's own episode store until it is stopped.
The console's commands go to the :class:`ConsoleOperator`, so the session's
arbiter decides every mode change as it does for any operator:

- ``takeover`` / ``hand_back``: the arbiter's takeover and release;
- ``reset``: the arbiter's reset; the episode ends and is committed, the next begins;
- ``pause``: the arbiter's pause; as the session defines it, nothing more is sent,
  the episode so far is committed (its operator marked paused) and the session
  stops. ``resume`` starts the next episode;
- ``estop``: the same pause, after which the session never resumes: its thread
  disconnects the robot (the twin closes its simulator; a real arm's disconnect
  stops it) and ends.

Episode labels go to ``<store>.labels.jsonl``, one JSON line per label with the
store's episode index; a label given while an episode runs is written when it is
committed (dropped, and logged, if the episode recorded nothing).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

from robot_learn.console.help_queue import HelpQueue
from robot_learn.console.operator import CommandRecord, ConsoleOperator
from robot_learn.loops.session import EpisodeSummary, HITLSession

# The session's states as the console shows them (the control mode is the arbiter's).
RUNNING, PAUSED, ESTOPPED, FINISHED, FAILED = "running", "paused", "estopped", "finished", "failed"


class ConsoleCommandRefused(ValueError):
    """A console request that means nothing in the session's state (HTTP 409)."""


@dataclass
class SessionSetup:
    """How to build one console session's parts (on its own thread)."""

    make_robot: Callable[[], Any]             # an unconnected Robot with reset(seed)
    make_policy: Callable[[Any], Any]         # robot -> the session's policy (act/reset) or None
    hands: Any                                # the Operator supplying human actions
    store: Any                                # this session's EpisodeStore, open for appending
    task: str
    rate_hz: float = 10.0
    max_steps: int = 100
    seed: int = 0
    round_index: int = 0
    policy_id: str = ""
    episodes: int | None = None               # stop after this many (None: until stopped)
    camera: str | None = None
    log_path: str | Path | None = None


class ConsoleSession:
    """A HITL session run for the console (see the module docstring)."""

    def __init__(self, session_id: str, setup: SessionSetup, help_queue: HelpQueue) -> None:
        self.id, self.setup, self.help = session_id, setup, help_queue
        self.operator = ConsoleOperator(setup.hands, camera=setup.camera, on_help=self._ask_for_help)
        self.state = RUNNING
        self.error = ""
        self.summaries: list[EpisodeSummary] = []
        self.episode_index: dict[int, int] = {}  # console episode count -> store index (-1: nothing recorded)
        self.session: HITLSession | None = None
        self.robot: Any = None
        self.labels_path = Path(str(setup.store.path)).with_suffix(".labels.jsonl")
        self._pending_labels: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._estop = False
        self._setup_error: Exception | None = None
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"console-{session_id}", daemon=True)

    # ----- lifecycle ---------------------------------------------------------------------
    def start(self) -> None:
        self.thread.start()

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Block until the robot is connected and the session built; re-raises a setup error."""
        if not self.ready.wait(timeout):
            raise TimeoutError(f"session {self.id} not ready after {timeout} s")
        if self._setup_error is not None:
            raise self._setup_error

    def stop(self, timeout: float = 30.0) -> None:
        """E-stop (if still running) and wait for the thread to end."""
        try:
            self.command(CommandRecord("estop", "", None, time.time()))
        except ConsoleCommandRefused:
            pass  # already e-stopped, finished or failed
        if self.thread.ident is not None:
            self.thread.join(timeout)

    def _run(self) -> None:
        setup = self.setup
        try:
            self.robot = setup.make_robot()
            self.robot.connect()
            self.session = HITLSession(self.robot, setup.make_policy(self.robot), self.operator, setup.store,
                                       setup.task, rate_hz=setup.rate_hz, max_steps=setup.max_steps,
                                       round_index=setup.round_index, policy_id=setup.policy_id, realtime=True,
                                       log_path=setup.log_path)
        except Exception as err:  # reported by wait_ready on the caller's thread
            self._setup_error, self.state, self.error = err, FAILED, str(err)
            self._disconnect()
            self.ready.set()
            return
        self.ready.set()
        seed = setup.seed + setup.store.num_episodes
        try:
            while not self._estop:
                if self.state == PAUSED:
                    self._wake.wait()
                    self._wake.clear()
                    continue
                if setup.episodes is not None and len(self.summaries) >= setup.episodes:
                    self.state = FINISHED
                    break
                ep = self.session.run_episode(seed)
                seed += 1
                self._episode_done(ep)
        except Exception as err:
            self.state, self.error = FAILED, f"{type(err).__name__}: {err}"
        finally:
            self._disconnect()

    def _disconnect(self) -> None:
        if self.robot is not None:
            self.robot.disconnect()

    def _episode_done(self, ep: EpisodeSummary) -> None:
        count = self.operator.view.episode
        with self._lock:
            self.summaries.append(ep)
            self.episode_index[count] = ep.index
            labels, self._pending_labels = self._pending_labels, []
            if ep.paused and not self._estop:
                self.state = PAUSED
        self.help.close(self.id, "episode ended")
        for label in labels:
            self._write_label(ep.index, label)

    # ----- console requests (server thread) --------------------------------------------------
    def command(self, record: CommandRecord) -> None:
        """Hand a console command to the session; :class:`ConsoleCommandRefused` when it
        means nothing in the current state (nothing is changed then)."""
        with self._lock:
            state = self.state
            if state in (ESTOPPED, FINISHED, FAILED):
                raise ConsoleCommandRefused(f"session {self.id} is {state}; it takes no more commands")
            if record.command == "resume":
                if state != PAUSED:
                    raise ConsoleCommandRefused(f"session {self.id} is {state}, not paused; nothing to resume")
                self.state = RUNNING
                self._wake.set()
                return
            if record.command == "estop":
                # Refuses every later command at once; the pause reaches the arbiter at the
                # next control step, before anything more is sent.
                self._estop, self.state = True, ESTOPPED
                if state == PAUSED:  # between episodes: nothing is moving; end the thread
                    self._wake.set()
                    return
            elif state == PAUSED:
                raise ConsoleCommandRefused(f"session {self.id} is paused; resume it first "
                                            f"(or e-stop it), not {record.command}")
            if record.command == "takeover":
                self.help.close(self.id, "taken over")
        self.operator.submit(record)

    def label(self, label: str, operator: str) -> dict[str, Any]:
        """Label the episode in flight (written when it is committed) or, between
        episodes, the last committed one; returns the label entry."""
        entry = {"label": label, "operator": operator, "at": time.time(), "session": self.id}
        with self._lock:
            running = self.state == RUNNING
            if running:
                self._pending_labels.append(entry)
        if running:
            return {**entry, "episode": "in flight"}
        committed = [i for i in self.episode_index.values() if i >= 0]
        if not committed:
            raise ConsoleCommandRefused(f"session {self.id} has no recorded episode to label")
        self._write_label(committed[-1], entry)
        return {**entry, "episode": committed[-1]}

    def _write_label(self, index: int, entry: dict[str, Any]) -> None:
        if index < 0:
            return  # the episode recorded no step: nothing to label
        with open(self.labels_path, "a") as f:
            f.write(json.dumps({"episode": index, **entry}) + "\n")

    def _ask_for_help(self, reason: str, step: int) -> None:
        if self.state == RUNNING:
            self.help.ask(self.id, reason, self.operator.view.episode, step)

    # ----- what the console shows -------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """The tile's data (everything but the frame)."""
        op = self.operator
        with op.lock:
            view = op.view
            live = {"episode": view.episode, "step": view.step, "progress": view.progress,
                    "success": view.success, "flags": list(view.flags), "frame_seq": view.frame_seq,
                    "takeovers": op.takeovers, "human_steps": op.human_steps}
        mode = self.session.arbiter.mode.value if self.session is not None else "reset"
        last = asdict(self.summaries[-1]) if self.summaries else None
        return {"id": self.id, "task": self.setup.task, "state": self.state, "mode": mode, "error": self.error,
                "closed": self.ready.is_set() and not self.thread.is_alive(),
                "episodes_done": len(self.summaries), "last_episode": last, **live}

    def frame(self) -> tuple[int, Any]:
        """The latest camera frame (uint8 HxWx3, or None) and its sequence number."""
        with self.operator.lock:
            return self.operator.view.frame_seq, self.operator.view.frame
