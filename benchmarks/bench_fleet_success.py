"""Fleet wall-clock to a success level, with 1 and with 2 actors.

For each actor count a fresh fleet (as in ``bench_fleet.py``: writer, weight hub, a
learner training the ``diffusion_state`` preset from scratch on the demos plus the
fleet's successes, N actors running the MuJoCo twin with the simulated operator) runs
for ``--minutes`` of wall clock, counted from the fleet's start (the learner trains with
``configs/train/default.yaml``'s settings, as ``robot-learn fleet`` does). Every
``--every`` seconds the weight hub's newest weights are kept (in memory, with their
learner step and wall time). After the fleet has shut down (so evaluation does not
share the CPU with it) each kept policy is evaluated on ``--episodes`` held-out seeds;
the time to each ``--level`` (several may be given, all fixed before the run) is the first
kept time whose success reaches it; since one 50-seed evaluation is about +-13 points, the
first kept time from which every later one stays at or above the level is printed too.

With ``--base-steps N`` the learner first trains on the demos alone for N steps (once,
not timed, no actors), and every fleet's learner resumes from that checkpoint: the
fleet then post-trains a policy that already works some of the time, as SOP's fleet
does, instead of learning from scratch. The base policy is evaluated too (wall clock 0).

``--actors 0`` is the control: the same learner for the same wall clock on the demos
alone. ``--rate-hz`` paces the actors as real arms (each then needs a small share of a
core, and the learner keeps its own); unpaced, the actors compete with the learner for
this machine's two cores.

    MUJOCO_GL=egl OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_fleet_success.py --actors 1 2
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path


def learner_config(out_dir: Path, args: argparse.Namespace):
    """The CLI's training settings (lr 1e-3, warm-up 200, ...), trained without end and on one thread."""
    from train_settings import cli_train_config

    return cli_train_config(steps=10_000_000, batch_size=args.batch_size, ckpt_every=1000, keep_last_k=1,
                            log_every=100_000, device="cpu", num_threads=1, progress_bar=False, out_dir=str(out_dir))


def train_base(root: Path, args: argparse.Namespace) -> Path:
    """A fleet without actors: its learner trains on the demos alone to ``--base-steps``
    (the first publish at or past it) and checkpoints at shutdown."""
    from bench_fleet import start_fleet

    out = root / "learner_base"
    fleet = start_fleet(root, args.task, 0, learner_config(out, args), max_steps=args.max_steps,
                        publish_every=args.publish_every, online_share=0.0)
    while (fleet.learner_progress() or {"step": 0})["step"] < args.base_steps:
        time.sleep(1.0)
    fleet.shutdown()
    return out


def run_fleet(root: Path, actors: int, args: argparse.Namespace) -> list[dict]:
    """Run one fleet for ``args.minutes``; the hub's weights every ``args.every`` seconds."""
    import shutil

    import ray
    from bench_fleet import start_fleet

    train = learner_config(root / f"learner_{actors}", args)
    if args.base_steps:
        shutil.copytree(root / "learner_base", train.out_dir)  # the learner resumes from the base
    t0 = time.perf_counter()  # the learner starts in start_fleet
    fleet = start_fleet(root, args.task, actors, train, max_steps=args.max_steps, publish_every=args.publish_every,
                        online_share=args.online_share if actors else 0.0, online_data=args.online_data,
                        rate_hz=args.rate_hz)
    kept, next_keep = [], args.every
    while next_keep <= args.minutes * 60:
        fleet.poll(timeout_s=0.5)
        now = time.perf_counter() - t0
        if now >= next_keep:
            current = ray.get(fleet.hub.current.remote())
            latest = ray.get(fleet.hub.latest.remote(""))
            learner = fleet.learner_progress() or {}
            if latest is not None:
                kept.append({"wall_s": round(now, 1), "step": current["step"], "files": latest[1],
                             "episodes": len(fleet.report.episodes),
                             "fleet_successes": sum(bool(e["success"]) for e in fleet.report.episodes),
                             "autonomous_successes": sum(bool(e["success"]) and not e["human_steps"]
                                                         for e in fleet.report.episodes),
                             "online_episodes": learner.get("online_episodes", -1),
                             "online_windows": learner.get("online_windows", -1)})
                print(f"  {actors} actor(s) t={now:.0f} s: learner step {current['step']}, "
                      f"{len(fleet.report.episodes)} episodes", flush=True)
            next_keep = (now // args.every + 1) * args.every
    fleet.shutdown()
    return kept


def main() -> None:
    from robot_learn.fleet.online_offline_sampler import ONLINE_DATA

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--actors", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--task", default="bin_place")
    parser.add_argument("--minutes", type=float, default=8.0, help="wall clock per fleet")
    parser.add_argument("--every", type=float, default=90.0, help="seconds between kept weights")
    parser.add_argument("--level", type=float, nargs="+", default=[0.5],
                        help="the success levels to reach (each reported on its own)")
    parser.add_argument("--episodes", type=int, default=50, help="held-out evaluation episodes per kept policy")
    parser.add_argument("--demos", type=int, default=50)
    parser.add_argument("--max-steps", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--publish-every", type=int, default=50)
    parser.add_argument("--online-share", type=float, default=0.5,
                        help="of each batch, the share from the fleet's online data (0: demos only, a control)")
    parser.add_argument("--online-data", default="hgdagger", choices=ONLINE_DATA,
                        help="hgdagger: the operator's runs and autonomous successes; successes: every "
                             "successful episode whole (the policy's steps in rescued ones too)")
    parser.add_argument("--base-steps", type=int, default=0,
                        help="train on the demos alone this many steps first; every fleet post-trains that policy")
    parser.add_argument("--rate-hz", type=float, default=0.0,
                        help="pace every actor's control loop at this rate, as real arms run (0: the twin "
                             "runs as fast as it can and the actors take CPU from the learner)")
    parser.add_argument("--out", default="", help="write the rows as JSON here")
    args = parser.parse_args()

    import torch

    from robot_learn.envs.demos import collect_demos
    from robot_learn.evaluation import evaluate
    from robot_learn.fleet import start_ray
    from robot_learn.fleet.policy_transfer import policy_from_files

    torch.set_num_threads(1)
    print(f"config: {json.dumps(vars(args))}, os.cpu_count() {os.cpu_count()}", flush=True)
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench_fleet_success_") as tmp:
        root = Path(tmp)
        collect_demos(args.task, args.demos, root / "demos.zarr", cameras=(), max_steps=args.max_steps,
                      progress_bar=False)
        start_ray(num_cpus=max(args.actors) + 1)
        base = None
        if args.base_steps:
            from robot_learn.policies import load_policy
            from robot_learn.training import find_latest_checkpoint

            checkpoint = find_latest_checkpoint(train_base(root, args))
            # Evaluated once here (nothing else runs now), for every fleet's wall clock 0.
            base = {"wall_s": 0.0, "step": int(checkpoint.name.split("_")[-1]), "episodes": 0,
                    "summary": evaluate(load_policy(checkpoint / "ema"), args.task, episodes=args.episodes,
                                        max_steps=args.max_steps, videos=0).summary}
            print(f"base: learner step {base['step']} on the demos alone", flush=True)
        for n in args.actors:
            results[n] = ([dict(base)] if base else []) + run_fleet(root, n, args)
    import ray

    ray.shutdown()
    torch.set_num_threads(2)
    rows = []

    def at(wall_s):
        return "not reached" if wall_s is None else f"{wall_s:.0f} s"

    for n, kept in results.items():
        reached, held = dict.fromkeys(args.level), dict.fromkeys(args.level)
        for k in kept:
            summary = k.pop("summary") if "summary" in k else evaluate(
                policy_from_files(k.pop("files")), args.task, episodes=args.episodes, max_steps=args.max_steps,
                videos=0).summary
            row = {"actors": n, **k, "success": summary.success_rate, "ci": [summary.ci_low, summary.ci_high],
                   "mean_progress": summary.mean_progress}
            rows.append(row)
            print(json.dumps(row), flush=True)
            for level in args.level:
                if summary.success_rate >= level:
                    reached[level] = k["wall_s"] if reached[level] is None else reached[level]
                    held[level] = k["wall_s"] if held[level] is None else held[level]
                else:
                    held[level] = None
        for level in args.level:
            print(f"{n} actor(s): success >= {level:.0%} first at {at(reached[level])}, "
                  f"held from {at(held[level])}", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
