"""Robots asking for help, and who answers: :class:`HelpQueue`.

A session asks when its hands' rule flags trouble (a stall, a regression, the arm
off plan; see :class:`~robot_learn.console.operator.ConsoleOperator`). A session has
at most one open request. A request is assigned to one of the console's operators
and closes when someone takes the session over or its episode ends.
"""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass
from typing import Any, Sequence


@dataclass
class HelpRequest:
    """One robot asking for help."""

    id: int
    session: str
    reason: str
    episode: int
    step: int
    asked_at: float
    assigned_to: str = ""
    closed_at: float | None = None
    closed_because: str = ""


class HelpQueue:
    """Open and closed help requests of every session (thread-safe)."""

    def __init__(self, operators: Sequence[str]) -> None:
        self.operators = tuple(operators)
        self._lock = threading.Lock()
        self._requests: list[HelpRequest] = []

    def ask(self, session: str, reason: str, episode: int, step: int) -> HelpRequest | None:
        """Open a request for ``session``; None when it already has an open one."""
        with self._lock:
            if any(r.session == session and r.closed_at is None for r in self._requests):
                return None
            request = HelpRequest(len(self._requests) + 1, session, reason, episode, step, time.time())
            self._requests.append(request)
            return request

    def assign(self, request_id: int, operator: str) -> HelpRequest:
        """Give an open request to ``operator``; ValueError naming the valid ids or operators."""
        if operator not in self.operators:
            raise ValueError(f"unknown operator {operator!r}; valid operators: {', '.join(self.operators)}")
        with self._lock:
            open_ids = [r.id for r in self._requests if r.closed_at is None]
            if request_id not in open_ids:
                raise LookupError(f"no open help request {request_id}; open requests: "
                                  f"{', '.join(map(str, open_ids)) or 'none'}")
            request = self._requests[request_id - 1]
            request.assigned_to = operator
            return request

    def close(self, session: str, because: str) -> None:
        """Close ``session``'s open request, if any."""
        with self._lock:
            for r in self._requests:
                if r.session == session and r.closed_at is None:
                    r.closed_at, r.closed_because = time.time(), because

    def snapshot(self) -> list[dict[str, Any]]:
        """Every request as a dict, oldest first."""
        with self._lock:
            return [asdict(r) for r in self._requests]
