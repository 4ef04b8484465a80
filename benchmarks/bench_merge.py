"""The RETAIN alpha sweep: merge a fine-tuned policy back towards its base and measure
target-task success and retention on the other tasks, per alpha.

    .venv/bin/python benchmarks/bench_merge.py BASE FINETUNED --task stack --others unstack bin_take \
        [--alphas 0 0.25 0.5 0.75 1] [--episodes 50] [--module-alpha obs_encoder=0.2]

BASE and FINETUNED are policy, run or checkpoint dirs of the same architecture (e.g.
``outputs/improve/<run>/base`` and a round's ``train``). ``--module-alpha`` pins alpha
for a module prefix while the swept value is the default for the rest. Retention on a
task is the merged policy's success there over the base policy's.

A single-task policy fine-tuned for a wider deployment (the efficacy protocol of
``bench_hitl.py``) has no other tasks to forget; its retention is measured on the
start spread it was first trained on: ``--spread medium --disturbances nudge slip``
sets the target's conditions and ``--others stack@narrow`` names a task under a spread:

    .venv/bin/python benchmarks/bench_merge.py outputs/eff/stack/base/policy \
        outputs/eff/stack/hgdagger/round_03/train --task stack --others stack@narrow \
        --spread medium --disturbances nudge slip --disturbance-probability 0.5
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from robot_learn.envs.conditions import EnvConditions
from robot_learn.evaluation import alpha_sweep, evaluate
from robot_learn.policies import load_policy
from robot_learn.policies.checkpoint import resolve_policy_dir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("base")
    parser.add_argument("finetuned")
    parser.add_argument("--task", required=True, help="the task the policy was fine-tuned for")
    parser.add_argument("--others", nargs="*", default=[],
                        help="tasks whose retention is measured; TASK@SPREAD: that task under a start spread")
    parser.add_argument("--spread", default="wide", help="the target's start spread (wide | medium | narrow)")
    parser.add_argument("--disturbances", nargs="*", default=[], help="the target's disturbances (nudge, slip)")
    parser.add_argument("--disturbance-probability", type=float, default=1.0)
    parser.add_argument("--alphas", nargs="+", type=float, default=[0.0, 0.25, 0.5, 0.75, 1.0])
    parser.add_argument("--module-alpha", nargs="*", default=[], help="PREFIX=ALPHA pinned per module")
    parser.add_argument("--episodes", type=int, default=50)
    parser.add_argument("--max-steps", type=int, default=None)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default=None, help="write the rows as JSON here")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    pinned = {k: float(v) for k, v in (item.split("=", 1) for item in args.module_alpha)}

    base = load_policy(resolve_policy_dir(args.base))
    finetuned = load_policy(resolve_policy_dir(args.finetuned))
    t0 = time.perf_counter()
    target = EnvConditions.of(args.spread, args.disturbances, args.disturbance_probability)

    def success(policy, name):
        task, _, spread = name.partition("@")
        conditions = EnvConditions.of(spread) if spread else target
        return evaluate(policy, task, episodes=args.episodes, videos=0, max_steps=args.max_steps,
                        workers=args.workers, vectorization="sync", conditions=conditions).summary

    print(f"target: {args.task} under {target.describe()}; others: {', '.join(args.others) or 'none'}")
    rows = alpha_sweep(base, finetuned, [{"default": a, **pinned} for a in args.alphas], args.task, args.others,
                       success=success)
    print(f"{'alpha':>6} {args.task + ' (target)':>22}" + "".join(f"{t + ' retention':>24}" for t in args.others)
          + (f"{'others: mean success':>24}{'mean retention':>16}" if len(args.others) > 1 else ""))
    for row in rows:
        target = row["target"]
        cells = "".join(f"{_ratio(row['retention'][t])} ({row['others'][t].success_rate:.0%})".rjust(24)
                        for t in args.others)
        if len(args.others) > 1:
            kept = [v for v in row["retention"].values() if v is not None]
            cells += (f"{sum(s.success_rate for s in row['others'].values()) / len(args.others):>24.0%}"
                      f"{_ratio(sum(kept) / len(kept) if kept else None):>16}")
        print(f"{row['alpha']['default']:>6.2f} {target.success_rate:>9.0%} [{target.ci_low:.0%}, "
              f"{target.ci_high:.0%}]".ljust(29) + cells)
    print(f"{time.perf_counter() - t0:.0f} s")
    if args.out:
        with open(args.out, "w") as f:
            json.dump([{"alpha": r["alpha"], "target": _summary(r["target"]), "retention": r["retention"],
                        "others": {t: _summary(s) for t, s in r["others"].items()}} for r in rows], f, indent=2)


def _summary(summary) -> dict:
    return {"success": summary.success_rate, "ci": [summary.ci_low, summary.ci_high]}


def _ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


if __name__ == "__main__":
    main()
