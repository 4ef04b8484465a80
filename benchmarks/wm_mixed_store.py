"""A world model's store with policy rollouts beside the expert's episodes.

Copies the expert store's training episodes (all but its last ``--held-out``), then every
episode of each rollout store (e.g. ``collected.zarr`` of a ``robot-learn improve
loop=autonomous`` round: a policy's own MuJoCo episodes, failures included), then the
expert's held-out episodes, so ``robot-learn wm train data.path=OUT`` trains on experts
and policies alike and is scored on the same held-out expert episodes as before. Only the
expert store's keys are copied; each rollout store must have them all.

    .venv/bin/python benchmarks/wm_mixed_store.py data/wm/bin_place_front_64.zarr \\
        outputs/wmroll/*/collected.zarr --out data/wm/bin_place_front_64_mixed.zarr
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from robot_learn.data import EpisodeStore
from robot_learn.loops.aggregation import write_selection


def copy_episodes(out: EpisodeStore, store: EpisodeStore, episodes: range, source: str,
                  keys: tuple[str, ...]) -> int:
    """Append ``episodes`` of ``store`` whole to ``out``; returns how many of them succeeded."""
    whole = {e: [(0, store.episode_range(e)[1] - store.episode_range(e)[0])] for e in episodes}
    write_selection(out, store, whole, source, keys)
    return int(store.meta["success"][list(episodes)].sum())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("expert", type=Path, help="the world model's expert store")
    parser.add_argument("rollouts", type=Path, nargs="+", help="stores of policy rollouts")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--held-out", type=int, default=10, help="the expert store's last N episodes (wm train's)")
    args = parser.parse_args()
    if args.out.exists():
        sys.exit(f"wm_mixed_store.py: error: --out {args.out} exists; give a new path")
    expert = EpisodeStore.open(args.expert, mode="r")
    keys = tuple(sorted(expert.keys))
    sources = [EpisodeStore.open(path, mode="r") for path in args.rollouts]
    for path, store in zip(args.rollouts, sources):
        missing = sorted(set(keys) - set(store.keys))
        if missing:
            sys.exit(f"wm_mixed_store.py: error: rollout store {path} lacks {missing}; it needs {list(keys)}")
    if not 0 < args.held_out < expert.num_episodes:
        sys.exit(f"wm_mixed_store.py: error: --held-out must be in [1, {expert.num_episodes - 1}], got {args.held_out}")
    train = expert.num_episodes - args.held_out
    out = EpisodeStore.open_or_create(args.out)
    try:
        wins = copy_episodes(out, expert, range(train), "demo", keys)
        print(f"expert: {train} training episodes, {wins} successful")
        for path, store in zip(args.rollouts, sources):
            wins = copy_episodes(out, store, range(store.num_episodes), "rollout", keys)
            print(f"{path}: {store.num_episodes} episodes, {wins} successful")
        copy_episodes(out, expert, range(train, expert.num_episodes), "demo", keys)
        print(f"expert: {args.held_out} held-out episodes last; {out.num_episodes} episodes in {args.out}")
    finally:
        out.close()


if __name__ == "__main__":
    main()
