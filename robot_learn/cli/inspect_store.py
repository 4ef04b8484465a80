"""``robot-learn inspect PATH``: print a summary of an episode store."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from robot_learn.cli.hydra_app import CLIError
from robot_learn.cli.keyvalue import run_simple

USAGE = "robot-learn inspect PATH"


def open_store(path: str | Path) -> Any:
    """Open the store at ``path`` for reading; CLIError if it is missing or not a store."""
    from robot_learn.data import EpisodeStore, StoreError

    path = Path(path)
    if not path.exists():
        raise CLIError(f"no episode store at '{path}'")
    try:
        return EpisodeStore.open(path, mode="r")
    except StoreError as err:
        raise CLIError(f"'{path}' is not a readable episode store: {err}") from None


def inspect_command(path: str) -> int:
    """Print episodes per task and source (with success), frames, keys and disk size."""
    from robot_learn.data import summarize

    print(summarize(open_store(path)))
    return 0


def main(argv: Sequence[str]) -> int:
    """Entry point for ``robot-learn inspect``."""
    return run_simple(inspect_command, argv, {}, USAGE,
                      "Prints episodes per task and source (with success), frames, "
                      "keys and disk size.", "robot-learn inspect")
