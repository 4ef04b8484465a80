"""A hard task learned from its easy reverse alone, and how well the easy task's ends cover the hard task's starts.

1. ``--demos`` expert episodes of the easy task (e.g. ``bin_take``), recorded to rest,
   reversed into demonstrations of the hard task (``bin_place``); the hard task's
   expert makes no training data.
2. ``robot-learn train`` of the state preset on them (``--steps``, 1 thread by
   default), evaluated on 50 held-out seeds of the hard task (the run's report).
3. Coverage: for the hard task's evaluation resets, the distance in the joint layout
   (object to move xy, target xy) to the nearest start of the reversed demos, and to
   the nearest start of the hard task's own expert demos (the store the default
   ``robot-learn train`` collects, ``data/<hard>_demos.zarr``, if present), and the
   object-to-target offsets of each.

    .venv/bin/python benchmarks/bench_reversed.py --easy bin_take --demos 100 --steps 4000
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import numpy as np

from robot_learn.data import EpisodeStore
from robot_learn.envs import make_env
from robot_learn.envs.demos import collect_demos
from robot_learn.envs.reversal import forward_task_of, reverse_into

MOVED, TARGET = slice(0, 2), slice(7, 9)  # xy of the object to move and of the target in env_state


def layouts(env_states: np.ndarray) -> np.ndarray:
    return np.concatenate([env_states[:, MOVED], env_states[:, TARGET]], axis=1)


def coverage(name: str, starts: np.ndarray, evals: np.ndarray | None) -> None:
    """A table row: ``starts``' object-to-target offsets and, given ``evals``, how near each eval start lies."""
    offset = starts[:, 2:] - starts[:, :2]
    near = "| - | - |"
    if evals is not None:
        nearest = np.min(np.linalg.norm(evals[:, None] - starts[None], axis=2), axis=1)
        near = f"| {np.median(nearest):.3f} | {np.percentile(nearest, 90):.3f} |"
    print(f"| {name} | {np.median(np.linalg.norm(offset, axis=1)):.3f} | {offset[:, 1].std():.3f} {near}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--easy", default="bin_take")
    parser.add_argument("--demos", type=int, default=100)
    parser.add_argument("--steps", type=int, default=4000)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default="outputs/bench_reversed")
    parser.add_argument("--eval-episodes", type=int, default=50)
    args = parser.parse_args()
    hard = forward_task_of(args.easy)  # ValueError listing the pairs
    out = Path(args.out)
    easy_path, reversed_path = out / f"{args.easy}_to_rest.zarr", out / f"{hard}_reversed.zarr"
    if not reversed_path.exists():
        collect_demos(args.easy, args.demos, easy_path, cameras=(), to_rest=True, progress_bar=False)
        easy = EpisodeStore.open(easy_path)
        written = reverse_into(EpisodeStore.create(reversed_path), easy, range(easy.num_episodes))
        print(f"{written} {args.easy} episodes reversed into {reversed_path}")
    run_dir = out / f"{hard}_from_{args.easy}"
    subprocess.run([str(Path(sys.executable).with_name("robot-learn")), "train", f"task={hard}",
                    "policy=diffusion_state", f"data.path={reversed_path}", f"train.steps={args.steps}",
                    f"train.num_threads={args.threads}", f"eval.episodes={args.eval_episodes}",
                    f"run_dir={run_dir}"], check=True)

    env = make_env(hard, cameras=())
    evals = layouts(np.array([env.reset(seed=1_000_000 + i)[0]["env_state"] for i in range(args.eval_episodes)]))
    print(f"\nlayouts of {hard}'s evaluation resets against the demos' starts (m):")
    print("| demos | object-target distance, median | its y spread (std) | eval start to nearest demo start, "
          "median | p90 |")
    print("| --- | ---: | ---: | ---: | ---: |")
    coverage(f"{args.easy}, reversed", layouts(_starts(reversed_path)), evals)
    own = Path("data") / f"{hard}_demos.zarr"
    if own.exists():
        coverage(f"{hard} expert (comparison only)", layouts(_starts(own)), evals)
    coverage(f"{hard} evaluation resets", evals, None)
    return 0


def _starts(path: Path) -> np.ndarray:
    store = EpisodeStore.open(path)
    return store.read("env_state")[store.episode_starts]


if __name__ == "__main__":
    sys.exit(main())
