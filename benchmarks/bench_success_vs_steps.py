"""Success against the number of inference (denoising) steps, for one trained policy.

Loads a trained diffusion policy (a policy dir, a training run dir or a trainer
checkpoint dir), switches its sampler without retraining, and evaluates each
setting on the same held-out seeds, so the rows differ only in the sampler.

    .venv/bin/python benchmarks/bench_success_vs_steps.py outputs/train/<run> \
        [--task stack] [--episodes 50] [--settings ddim:5 dpmsolver:5 ...]

The default settings are the rows of docs/benchmarks.md's table.
"""

from __future__ import annotations

import argparse
import time

import torch

from robot_learn.evaluation import EVAL_SEED, evaluate
from robot_learn.policies import load_policy
from robot_learn.policies.checkpoint import resolve_policy_dir

DEFAULT_SETTINGS = ["ddim:1", "ddim:2", "ddim:5", "ddim:10", "ddim:20", "dpmsolver:5", "dpmsolver:10", "ddpm:100"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoint")
    parser.add_argument("--task", default="stack")
    parser.add_argument("--episodes", type=int, default=50)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--settings", nargs="+", default=DEFAULT_SETTINGS,
                        help="scheduler:steps pairs; schedulers: ddpm, ddim, dpmsolver")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    policy = load_policy(resolve_policy_dir(args.checkpoint), expected_type="diffusion")
    policy.eval()
    print(f"task {args.task}, {args.episodes} episodes from seed {EVAL_SEED}, "
          f"{args.workers} envs, {args.threads} torch threads, checkpoint {args.checkpoint}")
    print(f"{'sampler':>14} {'success':>8} {'95% CI':>16} {'progress':>9} {'eval s':>7}")
    for setting in args.settings:
        kind, steps = setting.split(":")
        policy.set_inference_scheduler(kind, int(steps))
        t0 = time.perf_counter()
        result = evaluate(policy, args.task, episodes=args.episodes, workers=args.workers,
                          videos=0, vectorization="sync")
        s = result.summary
        print(f"{setting:>14} {s.success_rate:>8.0%} [{s.ci_low:5.1%}, {s.ci_high:5.1%}] "
              f"{s.mean_progress:>9.3f} {time.perf_counter() - t0:>7.1f}")


if __name__ == "__main__":
    main()
