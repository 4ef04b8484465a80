"""Success against CPU-minutes for the ways a policy can see, side by side in one run.

Setups (all the continuous diffusion U-Net; only what it observes differs):
- ``state``: proprioception + privileged object state (an upper bound, not deployable);
- ``scratch``: cameras end to end from scratch (``diffusion_image``);
- ``autoencoder``: cameras through a frame encoder pretrained label-free (reconstruction);
- ``privileged``: cameras through a frame encoder pretrained on privileged scene labels.

Every setup runs ``robot-learn train`` in a subprocess on the same demos, collected once
here (timed and counted in every setup's total), in a fresh data directory so each
frame encoder is pretrained (and timed) anew. Periodic evaluations give the curve; the
x axis is CPU-minutes of collection + pretraining + training, without evaluation time.
The final row of each setup is the run's own 50-episode evaluation, with its Wilson
interval and its total wall time (evaluation included).

    python benchmarks/bench_pixels.py --task bin_place --setups privileged,autoencoder,state,scratch

Each setup's row is written to ``<run>/bench_row.json`` as soon as it finishes, so
setups run in separate invocations (e.g. two at once, one torch thread each) can be
put in one table and plot afterwards:

    python benchmarks/bench_pixels.py --table outputs/bench_pixels_A/*/privileged outputs/bench_pixels_B/*/state
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import time
from pathlib import Path

SETUPS = {
    "state": ["policy=diffusion_state"],
    "scratch": ["policy=diffusion_image"],
    "autoencoder": ["policy=diffusion_pixels", "policy.frame_encoder.signal=autoencoder"],
    "privileged": ["policy=diffusion_pixels"],
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="bin_place")
    parser.add_argument("--setups", default="privileged,autoencoder,state,scratch")
    parser.add_argument("--steps", type=int, default=4000)
    parser.add_argument("--eval-every", type=int, default=1000)
    parser.add_argument("--periodic-episodes", type=int, default=20)
    parser.add_argument("--episodes", type=int, default=50)
    parser.add_argument("--demos", type=int, default=100)
    parser.add_argument("--out", default="outputs/bench_pixels")
    parser.add_argument("--extra", default="", help="more overrides for every run, space-separated")
    parser.add_argument("--table", nargs="+", metavar="RUN_DIR",
                        help="only print the table and plot of these finished setups' runs")
    args = parser.parse_args()
    if args.table:
        rows = [json.loads((Path(d) / "bench_row.json").read_text()) for d in args.table]
        report(rows, Path(args.table[0]).parent, args.task, args.periodic_episodes, args.episodes)
        return 0
    setups = [s for s in args.setups.split(",") if s]
    unknown = [s for s in setups if s not in SETUPS]
    if unknown:
        parser.error(f"unknown setups {unknown}; valid: {', '.join(SETUPS)}")
    out = Path(args.out) / time.strftime("%Y%m%d_%H%M%S")
    data = out / "data"
    exe = str(Path(sys.executable).with_name("robot-learn"))
    print(f"bench_pixels: task {args.task}, setups {setups}, {args.steps} steps, periodic eval every "
          f"{args.eval_every} ({args.periodic_episodes} episodes), final {args.episodes}; out {out}")

    collect_s = {}
    stores = {"state" if s == "state" else "pixels" for s in setups}
    for name in sorted(stores):
        cameras = "[]" if name == "state" else "[front,wrist]"
        t0 = time.perf_counter()
        subprocess.run([exe, "collect", f"task={args.task}", f"episodes={args.demos}",
                        f"out={data / f'{args.task}_{name}.zarr'}", f"cameras={cameras}"], check=True)
        collect_s[name] = time.perf_counter() - t0

    rows = []
    for setup in setups:
        store = "state" if setup == "state" else "pixels"
        run_dir = out / setup
        cmd = [exe, "train", f"task={args.task}", *SETUPS[setup], f"data.path={data / f'{args.task}_{store}.zarr'}",
               f"train.steps={args.steps}", f"train.eval_every={args.eval_every}",
               f"eval.periodic_episodes={args.periodic_episodes}", f"eval.episodes={args.episodes}",
               "eval.videos=0", f"run_dir={run_dir}", *args.extra.split()]
        print("\n$", " ".join(cmd), flush=True)
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True)
        wall = time.perf_counter() - t0 + collect_s[store]
        rows.append(summarise(setup, run_dir, data, collect_s[store], wall))
        (run_dir / "bench_row.json").write_text(json.dumps(rows[-1], indent=2))
    report(rows, out, args.task, args.periodic_episodes, args.episodes)
    return 0


def report(rows: list[dict], out: Path, task: str, periodic_episodes: int, episodes: int) -> None:
    """The table (stdout), ``results.json`` and the plot of finished setups."""
    print(f"\n| setup | collect + pretrain (min) | success at CPU-minutes (periodic, {periodic_episodes} ep) "
          f"| final success ({episodes} ep) [95% CI] | total wall (min) |")
    print("| --- | --- | --- | --- | --- |")
    for r in rows:
        curve = ", ".join(f"{m:.1f} min: {s:.0%}" for m, s in r["curve"])
        print(f"| {r['setup']} | {r['setup_min']:.1f} | {curve} | {r['success']:.0%} [{r['ci_low']:.0%}, "
              f"{r['ci_high']:.0%}] | {r['wall_min']:.1f} |")
    (out / "results.json").write_text(json.dumps(rows, indent=2))
    plot(rows, out / "success_vs_cpu_minutes.png", task)
    print(f"results: {out / 'results.json'}")


def summarise(setup: str, run_dir: Path, data: Path, collect_s: float, wall_s: float) -> dict:
    """Curve points (CPU-minutes, success) and the final evaluation of one run."""
    run_report = json.loads((run_dir / "report.json").read_text())
    pretrain_s = 0.0
    for metrics in (data / "frame_encoders").glob("*/pretraining.json") if setup in ("autoencoder", "privileged") else []:
        record = json.loads(metrics.read_text())
        if (record.get("signal") or setup) == setup:
            pretrain_s = record["time_s"] + record.get("render_s", 0.0)
    setup_s = collect_s + pretrain_s
    curve, train_s, last_step = [], 0.0, 0
    with open(run_dir / "metrics.csv") as f:
        for row in csv.DictReader(f):
            step = int(row["step"])
            if row.get("step_time"):
                train_s += float(row["step_time"]) * (step - last_step)
                last_step = step
            if row.get("eval/success_rate"):
                curve.append(((setup_s + train_s) / 60.0, float(row["eval/success_rate"])))
    summary = run_report["overall"]
    return {"setup": setup, "setup_min": setup_s / 60.0, "curve": curve, "success": summary["success_rate"],
            "ci_low": summary["ci_low"], "ci_high": summary["ci_high"], "wall_min": wall_s / 60.0}


def plot(rows: list[dict], path: Path, task: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for r in rows:
        if r["curve"]:
            xs, ys = zip(*r["curve"])
            ax.plot(xs, ys, marker="o", label=r["setup"])
    ax.set_xlabel("CPU-minutes (collect + pretrain + train)")
    ax.set_ylabel("success rate")
    ax.set_ylim(0, 1)
    ax.set_title(f"{task}: success against CPU-minutes")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)


if __name__ == "__main__":
    sys.exit(main())
