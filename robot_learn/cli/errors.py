"""The CLI-wide error rule: a user's mistake is one line on stderr and exit status 2.

Every ``robot-learn`` command runs through :func:`run_command`. An error that a user
caused (a bad key, file or value; see :func:`is_user_error`) prints
``<prog>: error: <one line>`` and returns 2; anything else is a bug and keeps its
traceback. ``--debug`` anywhere on the command line prints the traceback of user
errors too.
"""

from __future__ import annotations

import argparse
import re
import sys
import traceback
from typing import Any, Callable, Sequence

DEBUG_FLAG = "--debug"

# Raised by the libraries below for bad input; looked up in sys.modules so that this
# module imports none of them (an exception of a type can only exist once its module
# is loaded).
_LIBRARY_USER_ERRORS = (
    ("robot_learn.training.checkpoint", "CheckpointError"),
    ("robot_learn.hardware.errors", "ServoBusError"),
    ("hydra.errors", "HydraException"),
    ("omegaconf.errors", "OmegaConfBaseException"),
)
_OS_USER_ERRORS = (FileNotFoundError, FileExistsError, PermissionError, IsADirectoryError, NotADirectoryError)

_debug = False


class CLIError(Exception):
    """A user-facing error: printed as one line without a traceback, exit status 2."""


class OneLineArgumentParser(argparse.ArgumentParser):
    """argparse whose usage errors are a :class:`CLIError` (one line, exit 2) instead of
    the usage block; ``--help`` is unchanged. Subparsers inherit the class."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise CLIError(f"{message} (see '{self.prog} --help')")


def strip_debug_flag(argv: Sequence[str]) -> list[str]:
    """``argv`` without ``--debug``; seeing it turns on tracebacks for this process."""
    global _debug
    args = list(argv)
    if DEBUG_FLAG in args:
        _debug = True
        args = [a for a in args if a != DEBUG_FLAG]
    return args


def is_user_error(err: BaseException) -> bool:
    """True for errors caused by the user's input rather than by a bug.

    ``ValueError`` (and the project's errors derived from it: store, policy-load,
    interop), ``CLIError``, a missing or unwritable file, a bad checkpoint, a servo
    bus fault and Hydra/OmegaConf config errors; an instantiation error counts when
    its cause does.
    """
    hydra_errors = sys.modules.get("hydra.errors")
    if hydra_errors is not None and isinstance(err, hydra_errors.InstantiationException):
        return err.__cause__ is not None and is_user_error(err.__cause__)
    types: list[type] = [CLIError, ValueError, *_OS_USER_ERRORS]
    for module, name in _LIBRARY_USER_ERRORS:
        loaded = sys.modules.get(module)
        if loaded is not None:
            types.append(getattr(loaded, name))
    return isinstance(err, tuple(types))


def one_line(err: BaseException) -> str:
    """The message of ``err`` on one line.

    Indented lines (Hydra's lists of options) become a comma-separated list after
    their heading; Hydra's "Config search path" block and OmegaConf's
    ``full_key``/``object_type`` lines are dropped (the key is named once instead).
    """
    if isinstance(err, OSError) and err.filename is not None and err.strerror:
        return f"{err.strerror}: '{err.filename}'"
    text = str(err).split("Config search path:")[0]
    parts: list[str] = []
    items: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or re.match(r"^(full_key|object_type|reference_type)\s*[:=]", line):
            continue
        if raw[:1] in ("\t", " ") and parts:
            items.append(line)
            continue
        if items:
            parts[-1] = f"{parts[-1].rstrip(':')}: {', '.join(items)}"
            items = []
        parts.append(line)
    if items and parts:
        parts[-1] = f"{parts[-1].rstrip(':')}: {', '.join(items)}"
    message = "; ".join(parts) or type(err).__name__
    key = getattr(err, "full_key", None)
    if key and f"'{key}'" not in message and f" {key}" not in message:
        message += f" (key '{key}')"
    override = getattr(err, "override", None)  # Hydra's parse errors keep the override apart
    if isinstance(override, str) and override not in message:
        message = f"cannot parse '{override}': {message}"
    return message


def run_command(prog: str, fn: Callable[..., int | None], argv: Sequence[str], *args: Any) -> int:
    """Run ``fn(argv_without_debug, *args)`` under the CLI error rule; returns the exit status.

    User errors print ``<prog>: error: <one line>`` (after the traceback with
    ``--debug``) and return 2; Ctrl-C returns 130; other exceptions propagate.
    """
    argv = strip_debug_flag(argv)
    try:
        return int(fn(argv, *args) or 0)
    except KeyboardInterrupt:
        if _debug:
            traceback.print_exc()
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except Exception as err:
        if not is_user_error(err):
            raise
        if _debug:
            traceback.print_exc()
        print(f"{prog}: error: {one_line(err)}", file=sys.stderr)
        return 2
