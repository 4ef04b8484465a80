"""Policy ranking in a world model: each policy's success imagined against its success in MuJoCo.

Every policy runs through the same evaluation code twice: on held-out MuJoCo seeds,
and in the world model (``WorldModelEnvFactory``: rollouts start from the world
model's store, and a scorer judges the imagined steps). The script prints both
success rates per policy and the Pearson and Spearman correlations across policies.

    python benchmarks/bench_wm_ranking.py --world-model outputs/wm/RUN \\
        --policies outputs/train/RUN/checkpoints/step_0000500 ... --scorers nearest outputs/wm/RUN/success_model

``--sim-from`` an earlier run's JSON reuses its MuJoCo rates (the same seeds, so the same
episodes) when only the world model or the scorers change. ``--merge A.json B.json`` reports
over the policies of runs made apart (one per policy family, say) with the same design.
``--merge ... --ensemble`` takes runs of the same policies in several world models (one scorer
each) and ranks by each policy's imagined success averaged over them: an ensemble of world models.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np


def ranks(values: np.ndarray) -> np.ndarray:
    """Ranks from 1, ties given their average rank (as Spearman's rho needs)."""
    order = np.argsort(values, kind="stable")
    out = np.empty(len(values))
    out[order] = np.arange(1, len(values) + 1)
    for v in np.unique(values):
        tied = values == v
        out[tied] = out[tied].mean()
    return out


def pearson(x: np.ndarray, y: np.ndarray) -> float:
    if x.std() == 0 or y.std() == 0:
        return float("nan")
    return float(np.corrcoef(x, y)[0, 1])


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    return pearson(ranks(x), ranks(y))


def reused_sim(path: str, policies: list[str], episodes: int) -> dict[str, float]:
    """MuJoCo success per policy from an earlier run's JSON; exits naming what differs."""
    try:
        rows = json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        raise SystemExit(f"--sim-from {path}: cannot read it ({error})") from None
    found = {r["policy"]: r for r in rows}
    missing = [p for p in policies if p not in found]
    if missing:
        raise SystemExit(f"--sim-from {path} has no MuJoCo result for {missing}; it holds {sorted(found)}")
    counts = {p: found[p].get("sim_episodes") for p in policies}
    if any(n != episodes for n in counts.values()):
        raise SystemExit(f"--sim-from {path}: MuJoCo episodes per policy {sorted(set(counts.values()), key=str)}, "
                         f"not --episodes {episodes}")
    return {p: float(found[p]["sim"]) for p in policies}


def report(rows: list[dict], scorers: list[str]) -> None:
    """The per-policy table and, per scorer, the correlations with MuJoCo success."""
    sim = np.asarray([r["sim"] for r in rows])
    print("| policy | MuJoCo success | " + " | ".join(f"imagined ({s})" for s in scorers) + " |")
    print("| --- | ---: | " + " | ".join("---:" for _ in scorers) + " |")
    for r in rows:
        print(f"| {r['policy']} | {r['sim']:.0%} | " + " | ".join(f"{r[f'wm:{s}']:.0%}" for s in scorers) + " |")
    for s in scorers:
        wm = np.asarray([r[f"wm:{s}"] for r in rows])
        prog = np.asarray([r[f"wm:{s}:progress"] for r in rows])
        print(f"\nscorer {s}: success Pearson {pearson(sim, wm):.2f}, Spearman {spearman(sim, wm):.2f}; "
              f"imagined mean progress against MuJoCo success: Pearson {pearson(sim, prog):.2f}, "
              f"Spearman {spearman(sim, prog):.2f}")


def scorer_names(row: dict) -> list[str]:
    """The scorers whose imagined success a row holds (its ``wm:<scorer>`` keys)."""
    return sorted(k[3:] for k in row if k.startswith("wm:") and not k.endswith((":progress", ":s")))


def ensemble_rows(rows: list[dict], models: tuple[str, ...]) -> list[dict]:
    """One row per policy whose imagined success and progress are the means over the runs that hold it
    (one world model and scorer each); exits naming a policy that some runs lack or whose MuJoCo rates
    differ."""
    if len(models) < 2:
        raise SystemExit(f"--ensemble: the runs hold {len(models)} world model(s) ({list(models)}); "
                         "an ensemble needs runs of the same policies in at least two")
    by_policy: dict[str, list[dict]] = {}
    for row in rows:
        by_policy.setdefault(row["policy"], []).append(row)
    name, out = f"ensemble of {len(models)}", []
    for policy, group in by_policy.items():
        held = [scorer_names(r)[0] for r in group]  # one each, checked by merged()
        if sorted(held) != list(models):
            raise SystemExit(f"--ensemble: policy {policy} has imagined rates from {sorted(held)}, not from each of "
                             f"{list(models)} once")
        if len({r["sim"] for r in group}) != 1:
            raise SystemExit(f"--ensemble: policy {policy} has different MuJoCo rates {[r['sim'] for r in group]}")
        out.append({"policy": policy, "sim": group[0]["sim"],
                    f"wm:{name}": float(np.mean([r[f"wm:{s}"] for r, s in zip(group, held)])),
                    f"wm:{name}:progress": float(np.mean([r[f"wm:{s}:progress"] for r, s in zip(group, held)]))})
    return out


def merged(paths: list[str], ensemble: bool = False) -> int:
    """The report over the policies of several earlier runs' JSONs (run apart, e.g. one per family;
    with ``ensemble``, the same policies in several world models); exits naming a file that cannot be
    read or runs whose scorers or episode counts differ."""
    rows, designs, models = [], set(), set()
    for path in paths:
        try:
            part = json.loads(Path(path).read_text())
        except (OSError, ValueError) as error:
            raise SystemExit(f"--merge {path}: cannot read it ({error})") from None
        if not isinstance(part, list) or not part:
            raise SystemExit(f"--merge {path}: no policy rows in it (expected a bench_wm_ranking.py --out file)")
        scorers = tuple(scorer_names(part[0]))
        if ensemble and len(scorers) != 1:
            raise SystemExit(f"--ensemble: {path} holds {len(scorers)} scorers {list(scorers)}; each run must hold one")
        designs.add((part[0].get("sim_episodes"), part[0].get("wm_episodes"), part[0].get("wm_start", "store"),
                     () if ensemble else scorers))
        models.update(scorers)
        rows += part
    if len(designs) != 1:
        raise SystemExit(f"--merge: the runs differ in (MuJoCo episodes, imagined episodes, starts, scorers): "
                         f"{sorted(designs, key=str)}")
    (episodes, wm_episodes, _, scorers), = designs
    if ensemble:
        rows = ensemble_rows(rows, tuple(sorted(models)))
        scorers = (f"ensemble of {len(models)}",)
        wm_episodes = f"{len(models)} x {wm_episodes}"
    print(f"{len(rows)} policies from {len(paths)} runs, {episodes} MuJoCo episodes and {wm_episodes} imagined "
          f"episodes each\n")
    report(rows, list(scorers))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--merge", nargs="+", metavar="JSON", help="only report over earlier runs' --out files")
    parser.add_argument("--ensemble", action="store_true",
                        help="with --merge: the runs hold the same policies in different world models; rank by "
                             "each policy's imagined success averaged over them")
    parser.add_argument("--world-model", help="a wm train run dir (required unless --merge)")
    parser.add_argument("--store", default=None,
                        help="stored episodes whose first frames start the rollouts; default: the run's store")
    parser.add_argument("--policies", nargs="+", help="policy dirs (required unless --merge)")
    parser.add_argument("--scorers", nargs="+", default=["nearest"], help="nearest and/or success-model dirs")
    parser.add_argument("--start", choices=("store", "sim"), default="store",
                        help="imagined rollouts start from the store's episodes, or from fresh MuJoCo resets with "
                             "the evaluation's seeds (the layouts MuJoCo's episodes start from)")
    parser.add_argument("--episodes", type=int, default=50, help="MuJoCo episodes per policy")
    parser.add_argument("--wm-episodes", type=int, default=20, help="imagined episodes per policy and scorer")
    parser.add_argument("--sim-from", default=None,
                        help="an earlier run's --out JSON: its MuJoCo success rates are reused (same policies "
                             "and --episodes, checked) instead of evaluated again; the seeds are the same")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", default="outputs/bench_wm_ranking.json")
    args = parser.parse_args()
    if args.ensemble and not args.merge:
        parser.error("--ensemble works on earlier runs' files: give them with --merge")
    if args.merge:
        return merged(args.merge, args.ensemble)
    if not args.world_model or not args.policies:
        parser.error("--world-model and --policies are required (or --merge)")
    import torch  # here, not at the top: --merge and wm_ranking_power.py need only numpy

    from robot_learn.evaluation import evaluate
    from robot_learn.policies import load_policy
    from robot_learn.world_models.checkpoint import load_world_model, training_store
    from robot_learn.world_models.rollout import WorldModelEnvFactory

    torch.set_num_threads(args.threads)
    model = load_world_model(args.world_model)
    store = args.store or training_store(args.world_model)
    task = model.config.task
    earlier = reused_sim(args.sim_from, args.policies, args.episodes) if args.sim_from else {}
    rows = []
    for directory in args.policies:
        policy = load_policy(directory)
        if directory in earlier:
            row = {"policy": directory, "sim": earlier[directory], "sim_s": 0.0, "sim_from": args.sim_from}
        else:
            start = time.perf_counter()
            real = evaluate(policy, task, episodes=args.episodes, workers=2, vectorization="sync")
            row = {"policy": directory, "sim": real.success_rate, "sim_s": time.perf_counter() - start}
        row["sim_episodes"], row["wm_episodes"], row["wm_start"] = args.episodes, args.wm_episodes, args.start
        for scorer in args.scorers:
            start = time.perf_counter()
            factory = WorldModelEnvFactory(str(args.world_model), str(store), scorer=scorer, start=args.start)
            imagined = evaluate(policy, task, episodes=args.wm_episodes, workers=2, vectorization="sync",
                                conditions=factory, image_size=model.config.image_size)
            row[f"wm:{scorer}"] = imagined.success_rate
            row[f"wm:{scorer}:progress"] = imagined.summary.mean_progress
            row[f"wm:{scorer}:s"] = time.perf_counter() - start
        rows.append(row)
        print(json.dumps(row), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(rows, indent=1))
    print(f"\n{task}: {len(rows)} policies, {args.episodes} MuJoCo episodes and {args.wm_episodes} imagined "
          f"episodes each\n")
    report(rows, args.scorers)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
