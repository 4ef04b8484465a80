"""Success of one configuration over several training runs, and two configurations paired.

Each ``--runs`` argument is one training run: its evaluation reports (``report.json`` of
``robot-learn train`` or ``robot-learn eval``), comma-separated, merged by episode seed. The
script prints each run's success with its Wilson interval, the mean over runs with a
t-interval (which covers the run-to-run spread that one run's Wilson interval does not), the
spread between runs against the binomial spread of one run, and, with ``--against``, the two
configurations paired run by run (the same index = the same training seed) and pooled, with
the exact McNemar p over the episodes only one of them won.

    R=outputs/train; E=outputs/eval
    .venv/bin/python benchmarks/seed_spread.py \\
        --runs $R/px_k3_seed1/report.json,$E/seed1_1100/report.json,$E/seed1_1200/report.json ... \\
        --against $R/px_k5_seed1/report.json,$E/k5seed1_1100/report.json,$E/k5seed1_1200/report.json ...
"""

from __future__ import annotations

import argparse
import json
import statistics
from math import sqrt

from bench_wm_improve import mcnemar
from robot_learn.evaluation.metrics import wilson_interval

# Student's t, 97.5% quantile, by degrees of freedom (past 10, the value at 10: conservative).
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228}


def episodes(reports: str) -> dict[int, bool]:
    """Success per episode seed over the comma-separated reports of one run (one task each)."""
    out: dict[int, bool] = {}
    for path in reports.split(","):
        tasks = json.loads(open(path).read())["tasks"]
        if len(tasks) != 1:
            raise SystemExit(f"{path}: expected a report of one task, found {sorted(tasks)}")
        out.update({int(e["seed"]): bool(e["success"]) for e in next(iter(tasks.values()))["per_episode"]})
    return out


def describe(label: str, runs: list[dict[int, bool]]) -> None:
    rates = []
    for i, run in enumerate(runs):
        k, n = sum(run.values()), len(run)
        low, high = wilson_interval(k, n)
        rates.append(k / n)
        print(f"| {label} | run {i} | {k}/{n} | {100 * k / n:.1f}% [{100 * low:.1f}, {100 * high:.1f}] |")
    if len(rates) > 1:
        mean, sd = statistics.mean(rates), statistics.stdev(rates)
        half = T975[min(len(rates) - 1, 10)] * sd / sqrt(len(rates))
        n = statistics.mean(len(r) for r in runs)
        print(f"{label}: mean {100 * mean:.2f}% over {len(rates)} runs, 95% t-interval [{100 * (mean - half):.1f}, "
              f"{100 * (mean + half):.1f}]; between-run SD {100 * sd:.2f} points against a binomial SD of "
              f"{100 * sqrt(mean * (1 - mean) / n):.2f} for one run of {n:.0f} episodes")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", nargs="+", required=True, help="one entry per run: its reports, comma-separated")
    parser.add_argument("--against", nargs="*", default=[], help="the other configuration's runs, in seed order")
    parser.add_argument("--labels", nargs=2, default=["A", "B"])
    args = parser.parse_args()
    a = [episodes(r) for r in args.runs]
    b = [episodes(r) for r in args.against]
    print("| configuration | run | successes | success [95% Wilson CI] |")
    print("| --- | --- | ---: | ---: |")
    describe(args.labels[0], a)
    if b:
        describe(args.labels[1], b)
        only_a = only_b = 0
        for i, (x, y) in enumerate(zip(a, b)):
            common = sorted(set(x) & set(y))
            oa = sum(x[s] and not y[s] for s in common)
            ob = sum(y[s] and not x[s] for s in common)
            only_a, only_b = only_a + oa, only_b + ob
            print(f"run {i}: won only by {args.labels[0]} {oa}, only by {args.labels[1]} {ob} "
                  f"(exact McNemar p = {mcnemar(oa, ob):.3f}) over {len(common)} shared seeds")
        print(f"pooled over {min(len(a), len(b))} paired runs: only {args.labels[0]} {only_a}, only "
              f"{args.labels[1]} {only_b}, exact McNemar p = {mcnemar(only_a, only_b):.3f}")


if __name__ == "__main__":
    main()
