"""``robot-learn export-lerobot STORE --out ROOT``: write an episode store as a
LeRobotDataset v3 (needs the lerobot venv, see docs/interop.md)."""

from __future__ import annotations

import argparse
from typing import Sequence

from robot_learn.cli.errors import OneLineArgumentParser, run_command

PROG = "robot-learn export-lerobot"


def build_parser() -> argparse.ArgumentParser:
    """Arguments of ``robot-learn export-lerobot``."""
    parser = OneLineArgumentParser(
        prog=PROG, description="Write an episode store as a LeRobotDataset v3, with the HITL "
        "fields (intervention, policy_action, source, round, ...) as extra features.")
    parser.add_argument("store", metavar="STORE", help="episode store to export")
    parser.add_argument("--out", required=True, help="new dataset root (must not exist)")
    parser.add_argument("--repo-id", default=None,
                        help="dataset repo id (default robot_learn/<store name>)")
    parser.add_argument("--fps", type=int, default=None,
                        help="frame rate (default: the store's recorded rate, else 10)")
    parser.add_argument("--camera", action="append", dest="cameras", default=None,
                        help="store camera to export; repeat for several; default all")
    parser.add_argument("--images", action="store_true",
                        help="store PNG frames instead of encoded video")
    parser.add_argument("--vcodec", default="libsvtav1",
                        help="video codec for lerobot's encoder (libsvtav1, h264, hevc)")
    return parser


def main(argv: Sequence[str]) -> int:
    """Entry point for ``robot-learn export-lerobot``; exit 2 on bad input."""
    return run_command(PROG, _run, argv)


def _run(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    from robot_learn.interop.lerobot_io import export_lerobot

    summary = export_lerobot(args.store, args.out, repo_id=args.repo_id, fps=args.fps,
                             cameras=args.cameras, use_videos=not args.images,
                             vcodec=args.vcodec)
    print(summary)
    return 0
