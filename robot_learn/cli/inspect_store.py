"""``robot-learn inspect PATH [--verify]``: print a summary of an episode store;
``--verify`` also decodes every chunk and checks the store's records agree."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from robot_learn.cli.hydra_app import CLIError
from robot_learn.cli.keyvalue import run_simple

USAGE = "robot-learn inspect PATH [--verify]"
VERIFY_FLAG = "--verify"
# Damaged chunks named in the one-line error; the count says how many more there are.
_SHOWN_PROBLEMS = 5


def open_store(path: str | Path) -> Any:
    """Open the store at ``path`` for reading; CLIError if it is missing or not a store.
    A damaged or inconsistent store is an error naming the array and chunk."""
    from robot_learn.data import DamagedStoreError, EpisodeStore, StoreError

    path = Path(path)
    if not path.exists():
        raise CLIError(f"no episode store at '{path}'")
    try:
        return EpisodeStore.open(path, mode="r")
    except DamagedStoreError:
        raise  # already one line naming the store, the array and the chunk
    except StoreError as err:
        raise CLIError(f"'{path}' is not a readable episode store: {err}") from None


def verify_command(path: str) -> int:
    """Decode every committed chunk of the store at ``path``; print the throughput, or
    raise CLIError listing the damage."""
    from robot_learn.data.integrity import verify_store

    if not Path(path).exists():
        raise CLIError(f"no episode store at '{path}'")
    report = verify_store(path)
    if report.problems:
        shown = "; ".join(report.problems[:_SHOWN_PROBLEMS])
        more = len(report.problems) - _SHOWN_PROBLEMS
        raise CLIError(f"store '{path}' is damaged ({len(report.problems)} problem"
                       f"{'s' * (len(report.problems) > 1)}): {shown}"
                       f"{f'; and {more} more' if more > 0 else ''}")
    print(f"verified {report.chunks} chunks in {report.arrays} arrays: {report.decoded_bytes / 1e6:.1f} MB "
          f"decoded ({report.disk_bytes / 1e6:.1f} MB on disk) in {report.seconds:.2f} s, "
          f"{report.mb_per_s:.0f} MB/s; no damage found")
    if report.version < 2:
        print("note: this store was written before chunk checksums (format version 1): a "
              "missing chunk reads as zeros and flipped bytes may decode without error, so "
              "only chunks that fail to decode can be found")
    return 0


def inspect_command(path: str, verify: bool = False) -> int:
    """Print episodes per task and source (with success), frames, keys and disk size;
    with ``verify``, first check every chunk (exit 2 naming the damage)."""
    from robot_learn.data import summarize

    if verify:
        verify_command(path)
    print(summarize(open_store(path)))
    return 0


def main(argv: Sequence[str]) -> int:
    """Entry point for ``robot-learn inspect``."""
    verify = VERIFY_FLAG in argv
    rest = [a for a in argv if a != VERIFY_FLAG]
    return run_simple(lambda path: inspect_command(path, verify=verify), rest, {}, USAGE,
                      "Prints episodes per task and source (with success), frames, keys and "
                      "disk size. --verify first decodes every chunk, checks the commit record "
                      "against meta/episode_ends and reports the decode rate in MB/s; damage "
                      "is an error naming the array and chunk.", "robot-learn inspect")
