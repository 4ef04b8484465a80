"""Fleet throughput on Ray: episodes/s and learner samples/s with 1, 2 and 4 actors.

For each actor count a fresh fleet (writer, weight hub, learner, actors: the MuJoCo
'stack' twin with the simulated operator) runs on one local Ray. After every actor is up
and the learner has published, it measures for ``--seconds``: episodes committed to the
store and learner steps x batch size, each divided by the window. The learner trains
the ``diffusion_state`` preset (``--batch-size``) on the demos and the fleet's episodes
mixed half and half; every episode runs to success or ``--max-steps``. The CPU is
shared, so wall times are upper bounds.

    MUJOCO_GL=egl OMP_NUM_THREADS=1 nice -n 19 .venv/bin/python benchmarks/bench_fleet.py --actors 1 2 4
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any


def start_fleet(root: Path, task: str, actors: int, train: Any, *, max_steps: int, publish_every: int,
                online_share: float = 0.5, online_data: str = "hgdagger", rate_hz: float = 0.0) -> Any:
    """A started fleet on ``root/demos.zarr``: the learner training the ``diffusion_state``
    preset with ``train``, and ``actors`` actors (the twin of ``task``, no cameras, the
    simulated operator), all up. ``rate_hz`` > 0 paces every actor's control loop at that
    rate, as real arms run; 0 lets the twin run as fast as it can. Shared with
    ``bench_fleet_success.py``."""
    from robot_learn.fleet import Fleet
    from robot_learn.policies import diffusion_state_config

    fleet = Fleet(root / f"online_{actors}.zarr", {"policy_config": diffusion_state_config(),
                                                  "offline_path": str(root / "demos.zarr"), "tasks": [task],
                                                  "train": train, "publish_every": publish_every,
                                                  "online_share": online_share, "online_data": online_data})
    robot = {"_target_": "robot_learn.envs.make_sim_robot", "task": task, "cameras": [], "max_steps": max_steps}
    operator = {"_target_": "robot_learn.loops.operators.SimulatedOperator", "task": task, "budget_s": 1e9}
    fleet.start()
    pace = {"rate_hz": rate_hz, "realtime": True} if rate_hz > 0 else {}
    fleet.add_actors([{"name": f"robot-{i}", "task": task, "robot": robot, "operator": operator,
                       "max_steps": max_steps, **pace} for i in range(actors)])
    return fleet


def measure(root: Path, actors: int, args: argparse.Namespace) -> dict:
    from robot_learn.training import TrainConfig

    train = TrainConfig(steps=10_000_000, batch_size=args.batch_size, warmup_steps=10, ckpt_every=500,
                        keep_last_k=1, log_every=1000, device="cpu", num_threads=1, progress_bar=False,
                        out_dir=str(root / f"learner_{actors}"))
    t0 = time.perf_counter()
    fleet = start_fleet(root, "stack", actors, train, max_steps=args.max_steps, publish_every=args.publish_every)
    setup_s = time.perf_counter() - t0
    # Warm-up: every actor has finished one episode (weights loaded, envs built).
    fleet.run(actors, timeout_s=600)
    before_eps, before = len(fleet.report.episodes), fleet.learner_progress()
    t1 = time.perf_counter()
    while time.perf_counter() - t1 < args.seconds:
        fleet.poll(timeout_s=0.5)
    window = time.perf_counter() - t1
    after_eps, after = len(fleet.report.episodes), fleet.learner_progress()
    report = fleet.shutdown()
    episodes = after_eps - before_eps
    steps = sum(e["steps"] for e in report.episodes[before_eps:after_eps])
    return {"actors": actors, "window_s": round(window, 1), "setup_s": round(setup_s, 1), "episodes": episodes,
            "episodes_per_s": episodes / window, "env_steps_per_s": steps / window,
            "learner_steps": after["step"] - before["step"],
            "learner_samples_per_s": (after["step"] - before["step"]) * args.batch_size / window,
            "online_episodes_in_mix": after["online_episodes"], "actor_restarts": sum(report.actor_restarts.values())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--actors", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--seconds", type=float, default=60.0, help="measuring window per actor count")
    parser.add_argument("--max-steps", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--publish-every", type=int, default=50)
    parser.add_argument("--demos", type=int, default=10)
    parser.add_argument("--out", default="", help="write the rows as JSON here")
    args = parser.parse_args()

    import torch

    from robot_learn.envs.demos import collect_demos
    from robot_learn.fleet import start_ray

    torch.set_num_threads(1)
    print(f"config: task stack, policy diffusion_state, batch {args.batch_size}, max_steps {args.max_steps}, "
          f"window {args.seconds:.0f} s, actors {args.actors}, os.cpu_count() {os.cpu_count()}, "
          f"publish_every {args.publish_every}, {args.demos} demos", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_fleet_") as tmp:
        root = Path(tmp)
        collect_demos("stack", args.demos, root / "demos.zarr", cameras=(), max_steps=args.max_steps,
                      progress_bar=False)
        # Logical CPUs: one per actor and one for the learner, whatever the cores.
        start_ray(num_cpus=max(args.actors) + 1)
        for n in args.actors:
            row = measure(root, n, args)
            rows.append(row)
            print(json.dumps(row), flush=True)
    base = rows[0]
    print(f"\n{'actors':>6} {'episodes/s':>11} {'x':>5} {'env steps/s':>12} {'learner samples/s':>18} {'x':>5}")
    for r in rows:
        print(f"{r['actors']:>6} {r['episodes_per_s']:>11.3f} {r['episodes_per_s'] / max(base['episodes_per_s'], 1e-9):>5.2f}"
              f" {r['env_steps_per_s']:>12.1f} {r['learner_samples_per_s']:>18.1f}"
              f" {r['learner_samples_per_s'] / max(base['learner_samples_per_s'], 1e-9):>5.2f}")
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
