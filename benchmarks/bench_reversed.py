"""A hard task learned from its easy reverse alone, against the same recipe on the hard task's
own expert demos, and how well the easy task's ends cover the hard task's starts.

1. ``--demos`` expert episodes of the easy task (e.g. ``bin_take``), recorded to rest with
   the white square ``--drop-spot`` (``anywhere`` on the table, the rev2fwd recipe, or
   ``beside`` the target, the easy task's default), reversed into demonstrations of the
   hard task (``bin_place``); with ``--trim-after-release N``, each ends N rows after its
   final release instead of back at rest.
2. For comparison only: ``--demos`` expert demos of the hard task itself, the same count.
3. ``robot-learn train`` of the state preset on each (``--steps``, ``--threads`` each; the two
   arms run side by side, so they share the machine alike), evaluated on the same
   ``--eval-episodes`` held-out seeds of the hard task.
4. Coverage: for the hard task's evaluation resets, the distance in the joint layout
   (object to move xy, target xy) to the nearest start of each arm's demos.

    .venv/bin/python benchmarks/bench_reversed.py --easy bin_take --demos 100 --steps 4000

Meta-World's pair runs in ``.venv-bench`` (``--easy metaworld/peg-insert-side-reverse``: our
unplugging in peg-insert-side's scene; it has no drop spot, its peg is put down anywhere
in the hard task's start range):

    MUJOCO_GL=egl .venv-bench/bin/python benchmarks/bench_reversed.py --easy metaworld/peg-insert-side-reverse
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from robot_learn.data import EpisodeStore
from robot_learn.envs import make_env
from robot_learn.envs.conditions import EnvConditions
from robot_learn.envs.demos import collect_demos
from robot_learn.envs.external import is_external_task
from robot_learn.envs.reversal import forward_task_of, reverse_into
from robot_learn.envs.task_base import DROP_SPOTS
from robot_learn.evaluation.suite_table import suite_row

# xy of the object to move and of the target in env_state: our families; Meta-World (peg, hole)
LAYOUT = {"ours": (slice(0, 2), slice(7, 9)), "metaworld": (slice(0, 2), slice(14, 16))}
ARMS = ("reversed", "forward")


def layouts(env_states: np.ndarray, task: str) -> np.ndarray:
    moved, target = LAYOUT["metaworld" if is_external_task(task) else "ours"]
    return np.concatenate([env_states[:, moved], env_states[:, target]], axis=1)


def coverage(name: str, starts: np.ndarray, evals: np.ndarray | None) -> None:
    """A table row: ``starts``' object-to-target offsets and, given ``evals``, how near each eval start lies."""
    offset = starts[:, 2:] - starts[:, :2]
    near = "| - | - |"
    if evals is not None:
        nearest = np.min(np.linalg.norm(evals[:, None] - starts[None], axis=2), axis=1)
        near = f"| {np.median(nearest):.3f} | {np.percentile(nearest, 90):.3f} |"
    print(f"| {name} | {np.median(np.linalg.norm(offset, axis=1)):.3f} | {offset[:, 1].std():.3f} {near}")


def demo_stores(easy: str, hard: str, demos: int, drop_spot: str, trim: int | None, out: Path) -> dict[str, Path]:
    """The store of each arm, collected when missing (the reversed one from the easy task's to-rest episodes)."""
    external = is_external_task(easy)  # no drop spot: its expert puts down anywhere in the start range
    drop = "" if external else f"_{drop_spot}"
    easy_name, hard_name = easy.replace("/", "_"), hard.replace("/", "_")
    name = f"{hard_name}_reversed{drop}" + ("" if trim is None else f"_trim{trim}")
    stores = {"reversed": out / f"{name}.zarr", "forward": out / f"{hard_name}_forward.zarr"}
    if not stores["reversed"].exists():
        easy_path = out / f"{easy_name}_to_rest{drop}.zarr"
        if not easy_path.exists():
            collect_demos(easy, demos, easy_path, cameras=(), to_rest=True, progress_bar=False,
                          conditions=None if external else EnvConditions(drop_spot=drop_spot))
        source = EpisodeStore.open(easy_path)
        written = reverse_into(EpisodeStore.create(stores["reversed"]), source, range(source.num_episodes), trim=trim)
        print(f"{written} {easy} episodes{'' if external else f' (drop spot {drop_spot})'} reversed "
              f"into {stores['reversed']}")
    if not stores["forward"].exists():
        collect_demos(hard, demos, stores["forward"], cameras=(), progress_bar=False)
    return stores


def train_arms(hard: str, stores: dict[str, Path], args: argparse.Namespace, out: Path) -> dict[str, dict]:
    """``robot-learn train`` on each arm's store, side by side; each arm's suite row."""
    cli = str(Path(sys.executable).with_name("robot-learn"))
    runs = {}
    for arm, store in stores.items():
        run_dir = out / store.stem
        if not (run_dir / "report.json").exists():
            log = run_dir.with_suffix(".log").open("w")
            command = [cli, "train", f"task={hard}", "policy=diffusion_state", f"data.path={store}",
                       f"train.steps={args.steps}", f"train.num_threads={args.threads}",
                       f"eval.episodes={args.eval_episodes}", "+train.progress_bar=false", f"run_dir={run_dir}"]
            runs[arm] = (run_dir, subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT))
        else:
            runs[arm] = (run_dir, None)
    rows = {}
    for arm, (run_dir, process) in runs.items():
        if process is not None and process.wait():
            raise SystemExit(f"{arm} arm failed (exit {process.returncode}); see {run_dir.with_suffix('.log')}")
        rows[arm] = suite_row(hard, json.loads((run_dir / "report.json").read_text()), run_dir)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--easy", default="bin_take")
    parser.add_argument("--drop-spot", default="anywhere", choices=DROP_SPOTS)
    parser.add_argument("--trim-after-release", type=int, default=None, metavar="N",
                        help="end each reversed episode N rows after its final release (default: whole, to rest)")
    parser.add_argument("--demos", type=int, default=100)
    parser.add_argument("--steps", type=int, default=4000)
    parser.add_argument("--threads", type=int, default=1, help="torch threads of each arm (two arms run at once)")
    parser.add_argument("--out", default="outputs/bench_reversed")
    parser.add_argument("--eval-episodes", type=int, default=50)
    args = parser.parse_args()
    hard = forward_task_of(args.easy)  # ValueError listing the pairs
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stores = demo_stores(args.easy, hard, args.demos, args.drop_spot, args.trim_after_release, out)
    rows = train_arms(hard, stores, args, out)

    print(f"\n{hard} from {args.demos} demos, {args.steps} steps ({args.eval_episodes} held-out seeds):")
    print("| training data | demos | frames | success [95% CI] | mean progress | train s | eval s |")
    print("| --- | ---: | ---: | --- | ---: | ---: | ---: |")
    trimmed = "" if args.trim_after_release is None else f", trimmed {args.trim_after_release} after release"
    drop = "" if is_external_task(args.easy) else f" (drop {args.drop_spot})"
    for arm, r in rows.items():
        store = EpisodeStore.open(stores[arm])
        name = f"{args.easy}{drop}, reversed{trimmed}" if arm == "reversed" else f"{hard} expert"
        print(f"| {name} | {store.num_episodes} | {store.num_frames} | {r['success_rate']:.0%} "
              f"({r['successes']}/{r['episodes']}) [{r['ci_low']:.1%}, {r['ci_high']:.1%}] | "
              f"{r['mean_progress']:.3f} | {r['train_s']:.0f} | {r['eval_s']:.0f} |")
    ratio = rows["reversed"]["success_rate"] / rows["forward"]["success_rate"] if rows["forward"]["success_rate"] else None
    print(f"reversed / forward success: {'-' if ratio is None else f'{ratio:.2f}x'}")

    env = make_env(hard, cameras=())
    evals = layouts(np.array([env.reset(seed=1_000_000 + i)[0]["env_state"] for i in range(args.eval_episodes)]),
                    hard)
    print(f"\nlayouts of {hard}'s evaluation resets against the demos' starts (m):")
    print("| demos | object-target distance, median | its y spread (std) | eval start to nearest demo start, "
          "median | p90 |")
    print("| --- | ---: | ---: | ---: | ---: |")
    coverage(f"{args.easy}{drop}, reversed", layouts(_starts(stores["reversed"]), hard), evals)
    coverage(f"{hard} expert", layouts(_starts(stores["forward"]), hard), evals)
    coverage(f"{hard} evaluation resets", evals, None)
    return 0


def _starts(path: Path) -> np.ndarray:
    store = EpisodeStore.open(path)
    return store.read("env_state")[store.episode_starts]


if __name__ == "__main__":
    sys.exit(main())
