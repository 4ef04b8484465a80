"""The console's state and requests, apart from the web: :class:`OperatorConsole`.

It holds the sessions, the help queue, the names of the operators who can be
assigned help and the episode labels they may give. The web app
(:mod:`robot_learn.console.app`) turns HTTP requests into calls of
:meth:`OperatorConsole.command`, :meth:`label` and :meth:`assign`, which check the
request completely before they change anything.
"""

from __future__ import annotations

import secrets
import time
from typing import Any, Mapping, Sequence

from robot_learn.console.console_session import ConsoleSession, SessionSetup
from robot_learn.console.help_queue import HelpQueue
from robot_learn.console.operator import CommandRecord
from robot_learn.console.request_checks import COMMANDS, BadConsoleRequest, check_body


class OperatorConsole:
    """Sessions, help queue, operators and labels of one console (see the module docstring).

    ``token``: the secret every request must carry (default: a fresh random one).
    """

    def __init__(self, setups: Mapping[str, SessionSetup], operators: Sequence[str], labels: Sequence[str],
                 token: str | None = None) -> None:
        for name, values in (("operators", operators), ("labels", labels)):
            values = list(values)
            if not values or not all(isinstance(v, str) and v for v in values) or len(set(values)) != len(values):
                raise ValueError(f"{name} must be a non-empty list of distinct non-empty names, got {values}")
        if not setups:
            raise ValueError("a console needs at least one session")
        self.operators, self.labels = tuple(operators), tuple(labels)
        self.help = HelpQueue(self.operators)
        self.sessions = {sid: ConsoleSession(sid, setup, self.help) for sid, setup in setups.items()}
        self.token = token or secrets.token_urlsafe(24)

    def start(self, timeout: float = 120.0) -> None:
        """Start every session and wait until all are running; on a setup error stop
        them all and raise it."""
        for s in self.sessions.values():
            s.start()
        try:
            for s in self.sessions.values():
                s.wait_ready(timeout)
        except Exception:
            self.stop()
            raise

    def stop(self) -> None:
        """E-stop every session still running and wait for their threads."""
        for s in self.sessions.values():
            s.stop()

    def session(self, session_id: str) -> ConsoleSession:
        if session_id not in self.sessions:
            raise LookupError(f"unknown session {session_id!r}; sessions: {', '.join(self.sessions)}")
        return self.sessions[session_id]

    # ----- requests ------------------------------------------------------------------------
    def command(self, session_id: str, body: bytes) -> dict[str, Any]:
        """``{"command": ..., "operator"?: ..., "clicked_at"?: seconds}`` for a session."""
        session = self.session(session_id)
        request = check_body(body, {"command": COMMANDS}, {"operator": self.operators, "clicked_at": float})
        clicked_at = request.get("clicked_at")
        record = CommandRecord(request["command"], request.get("operator", ""),
                               None if clicked_at is None else float(clicked_at), time.time())
        session.command(record)
        return {"session": session_id, "command": record.command, "accepted": True}

    def label(self, session_id: str, body: bytes) -> dict[str, Any]:
        """``{"label": ..., "operator"?: ...}`` for a session's episode."""
        session = self.session(session_id)
        request = check_body(body, {"label": self.labels}, {"operator": self.operators})
        return session.label(request["label"], request.get("operator", ""))

    def assign(self, request_id: str, body: bytes) -> dict[str, Any]:
        """``{"operator": ...}`` for a help request."""
        if not request_id.isdigit():
            raise BadConsoleRequest(f"help request id must be a number, got {request_id!r}")
        request = check_body(body, {"operator": self.operators})
        return vars(self.help.assign(int(request_id), request["operator"]))

    # ----- what the browser shows ----------------------------------------------------------
    def state(self) -> dict[str, Any]:
        return {"sessions": [s.snapshot() for s in self.sessions.values()], "help": self.help.snapshot(),
                "operators": list(self.operators), "labels": list(self.labels), "commands": list(COMMANDS)}
