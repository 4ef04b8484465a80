"""Evaluation throughput: episodes per second of ``evaluate`` for vectorisation
settings and torch thread counts, measured side by side in one run.

    .venv/bin/python benchmarks/eval_throughput.py --episodes 4 --repeats 3

Uses an untrained state-only DiffusionPolicy (the default preset): an untrained
policy never succeeds, so every episode runs to ``max_steps`` and the work per
episode is fixed.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import torch

from robot_learn.evaluation import evaluate
from robot_learn.policies import diffusion_state_config, make_policy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="stack")
    parser.add_argument("--episodes", type=int, default=4)
    parser.add_argument("--max-steps", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--videos", type=int, default=0,
                        help="record this many episodes to mp4 (renders front+wrist in their waves)")
    args = parser.parse_args()

    policy = make_policy("diffusion", diffusion_state_config())
    settings = [  # (label, workers, vectorization, torch threads)
        ("sync  x1, 1 thread ", 1, "sync", 1),
        ("sync  x2, 1 thread ", 2, "sync", 1),
        ("async x2, 1 thread ", 2, "async", 1),
        ("async x2, 2 threads", 2, "async", 2),  # evaluate caps torch threads for async
    ]
    print(f"task={args.task} episodes={args.episodes} max_steps={args.max_steps} "
          f"repeats={args.repeats} videos={args.videos} policy=diffusion_state (untrained) "
          f"params={sum(p.numel() for p in policy.parameters()) / 1e6:.2f}M")
    medians = {}
    for label, workers, mode, threads in settings:
        torch.set_num_threads(threads)
        times = []
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory() as out_dir:
                t = time.perf_counter()
                evaluate(policy, args.task, episodes=args.episodes, workers=workers,
                         videos=args.videos, out_dir=out_dir, max_steps=args.max_steps,
                         vectorization=mode)
                times.append(time.perf_counter() - t)
        medians[label] = statistics.median(times)
    base = medians[settings[0][0]]
    print(f"{'setting':<22}{'median s':>10}{'episodes/s':>12}{'speed-up':>10}")
    for label, m in medians.items():
        print(f"{label:<22}{m:>10.2f}{args.episodes / m:>12.2f}{base / m:>9.2f}x")


if __name__ == "__main__":
    main()
