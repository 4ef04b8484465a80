"""``robot-learn import-lerobot ROOT_OR_REPO_ID --out STORE``: read a LeRobotDataset v3
into an episode store (needs the lerobot venv, see docs/interop.md)."""

from __future__ import annotations

import argparse
from typing import Sequence

from robot_learn.cli.errors import OneLineArgumentParser, run_command

PROG = "robot-learn import-lerobot"


def build_parser() -> argparse.ArgumentParser:
    """Arguments of ``robot-learn import-lerobot``."""
    parser = OneLineArgumentParser(
        prog=PROG, description="Import a LeRobotDataset v3 (local root or Hub repo id) into an "
        "episode store; episodes whose video does not decode are skipped and counted.")
    parser.add_argument("dataset", metavar="ROOT_OR_REPO_ID",
                        help="dataset root directory, or a Hub id 'owner/name'")
    parser.add_argument("--out", required=True, help="episode store (created if absent)")
    parser.add_argument("--camera", action="append", dest="cameras", default=None,
                        help="camera to import (e.g. 'front' or 'observation.images.front'); "
                        "repeat for several; default all")
    parser.add_argument("--fps", type=int, default=None,
                        help="required frame rate; an error if the dataset differs")
    parser.add_argument("--task", default=None, help="task name for episodes (default: repo name)")
    parser.add_argument("--source", default="teleop",
                        help="episode source for datasets without one (default teleop)")
    return parser


def main(argv: Sequence[str]) -> int:
    """Entry point for ``robot-learn import-lerobot``; exit 2 on bad input."""
    return run_command(PROG, _run, argv)


def _run(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    from robot_learn.interop.lerobot_io import import_lerobot

    summary = import_lerobot(args.dataset, args.out, cameras=args.cameras, fps=args.fps,
                             task=args.task, source=args.source)
    print(summary)
    return 1 if summary.episodes == 0 else 0
