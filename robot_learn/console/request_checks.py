"""Checking what a browser sends the console, before anything is changed.

Each request body is a small JSON object. :func:`check_body` refuses, with one line
naming the bad key or value and the valid choices, a body that is not JSON, not an
object, too large, missing a key, carrying an unknown key, or holding a value of
the wrong type or outside its choices.
"""

from __future__ import annotations

import json
import math
from typing import Any, Mapping, Sequence

MAX_BODY_BYTES = 4096

COMMANDS = ("takeover", "hand_back", "pause", "resume", "reset", "estop")


class BadConsoleRequest(ValueError):
    """A malformed console request (HTTP 400); nothing was changed."""


def check_body(body: bytes, required: Mapping[str, Sequence[str] | type],
               optional: Mapping[str, Sequence[str] | type] = {}) -> dict[str, Any]:
    """The JSON object in ``body`` with its keys checked. Each key maps to its valid
    choices (a sequence of strings) or to its type (``str``; ``float`` takes any
    finite number)."""
    if len(body) > MAX_BODY_BYTES:
        raise BadConsoleRequest(f"request body has {len(body)} bytes; at most {MAX_BODY_BYTES}")
    try:
        obj = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise BadConsoleRequest(f"request body is not JSON ({err.__class__.__name__}: {err})") from None
    if not isinstance(obj, dict):
        raise BadConsoleRequest(f"request body must be a JSON object, got {type(obj).__name__}")
    allowed = {**required, **optional}
    unknown = sorted(set(obj) - set(allowed))
    if unknown:
        raise BadConsoleRequest(f"unknown key {', '.join(map(repr, unknown))}; valid keys: {', '.join(allowed)}")
    missing = [k for k in required if k not in obj]
    if missing:
        raise BadConsoleRequest(f"missing key {', '.join(map(repr, missing))}; required keys: {', '.join(required)}")
    for key, value in obj.items():
        _check_value(key, value, allowed[key])
    return obj


def _check_value(key: str, value: Any, rule: Sequence[str] | type) -> None:
    if rule is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise BadConsoleRequest(f"{key} must be a finite number, got {value!r}")
    elif rule is str:
        if not isinstance(value, str):
            raise BadConsoleRequest(f"{key} must be a string, got {value!r}")
    elif not isinstance(value, str) or value not in rule:
        raise BadConsoleRequest(f"unknown {key} {value!r}; valid {key}s: {', '.join(rule)}")
