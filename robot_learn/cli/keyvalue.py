"""Parsing ``PATH key=value ...`` arguments for the small non-Hydra commands."""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from robot_learn.cli.errors import CLIError, run_command


def parse_path_and_options(argv: Sequence[str], defaults: Mapping[str, Any],
                           usage: str) -> tuple[str, dict[str, Any]] | None:
    """Split ``argv`` into one positional path and ``key=value`` options.

    Values are converted to the type of their default (int, str). Returns None
    when help was asked for; raises ``CLIError`` naming unknown keys and the
    valid ones, a missing path, or a bad value.
    """
    if any(a in ("-h", "--help") for a in argv):
        return None
    paths = [a for a in argv if "=" not in a]
    if len(paths) != 1:
        raise CLIError(f"expected exactly one PATH, got {len(paths)} ({paths}); usage: {usage}")
    options = dict(defaults)
    for arg in argv:
        if "=" not in arg:
            continue
        key, value = arg.split("=", 1)
        key = key.lstrip("+")  # accept Hydra-style '+key=value' too
        if key == "path":
            continue
        if key not in defaults:
            valid = f"valid options: {', '.join(defaults)}" if defaults else "this command takes no options"
            raise CLIError(f"unknown option '{key}'; {valid} (usage: {usage})")
        kind = type(defaults[key]) if defaults[key] is not None else str
        try:
            options[key] = kind(value)
        except ValueError:
            raise CLIError(f"option {key}={value!r} is not a valid {kind.__name__}") from None
    return paths[0], options


def run_simple(fn: Callable[..., int | None], argv: Sequence[str], defaults: Mapping[str, Any], usage: str,
               help_text: str, prog: str) -> int:
    """Parse ``argv`` and call ``fn(path, **options)``; errors exit 2 with one line."""

    def parse_and_run(args: list[str]) -> int:
        parsed = parse_path_and_options(args, defaults, usage)
        if parsed is None:
            print(f"usage: {usage}\n\n{help_text}")
            return 0
        path, options = parsed
        return int(fn(path, **options) or 0)

    return run_command(prog, parse_and_run, argv)
