"""HITL methods side by side under the simulated operator, same human-seconds budget.

The efficacy protocol, by default: for each task (stack and bin_place, two task
families) a base policy is trained on expert demos from a **narrow** start spread
(``--demo-spread``), then deployed where it has something to fix: the **medium** spread
(about three times the narrow one's reach; on the wide ring a narrow base fails almost always)
with mid-episode disturbances (``--spread``, ``--disturbances``: an object nudged
before the grasp, a carried grasp that slips). Every round collects, and every
evaluation runs, under the deployment conditions. From that base each method runs
``--rounds`` rounds of collect -> curate -> fine-tune -> evaluate: HG-DAgger, HG-DAgger +
curated rollouts (HELP), RECAP, and two controls: the policy's own successes with no
operator (``autonomous``), and whole demonstrations recorded with the same human-seconds
(``more_demos``). Prints success per round with 95% intervals, human seconds, and the
final success of each method relative to each control.

    .venv/bin/python benchmarks/bench_hitl.py --small        # minutes: plumbing check
    .venv/bin/python benchmarks/bench_hitl.py                # the full comparison
    .venv/bin/python benchmarks/bench_hitl.py --demo-spread wide --spread wide --disturbances   # the old setup
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import time
from pathlib import Path

import torch


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", nargs="+", default=["stack", "bin_place"])
    ap.add_argument("--methods", nargs="+", default=["hgdagger", "help_curated", "recap", "autonomous", "more_demos"])
    ap.add_argument("--demo-spread", default="narrow", help="start spread of the base demos (wide | medium | narrow)")
    ap.add_argument("--spread", default="medium", help="start spread where the rounds collect and evaluate")
    ap.add_argument("--disturbances", nargs="*", default=["nudge", "slip"],
                    help="disturbances where the rounds collect and evaluate (none: give the flag alone)")
    ap.add_argument("--disturbance-probability", type=float, default=0.5, help="chance per episode of each")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--demos", type=int, default=30)
    ap.add_argument("--base-steps", nargs="+", default=["800"],
                    help="base training steps: one number for every task, or TASK=STEPS pairs "
                         "(e.g. stack=2000 peg_insert=4000) to put each family's base at 20-50%%")
    ap.add_argument("--base-policy", nargs="*", default=[],
                    help="TASK=DIR: start that task from a saved base policy (trained on its --demo-spread "
                         "demos) instead of training one")
    ap.add_argument("--lr", type=float, default=1e-3, help="base training (the default recipe's lr)")
    ap.add_argument("--finetune-lr", type=float, default=None, help="per-round fine-tuning lr (default: --lr)")
    ap.add_argument("--episodes", type=int, default=10, help="collected per round")
    ap.add_argument("--train-steps", type=int, default=400, help="fine-tune steps per round")
    ap.add_argument("--eval-episodes", type=int, default=50)
    ap.add_argument("--budget-s", type=float, default=40.0, help="human seconds per round")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--out", default="outputs/bench_hitl")
    ap.add_argument("--no-widen", action="store_true",
                    help="keep each policy's sampling range at its base demos' (loop widen_range=false)")
    ap.add_argument("--small", action="store_true", help="tiny budget: checks the plumbing only")
    args = ap.parse_args()
    if args.small:
        args.demos, args.base_steps, args.episodes, args.train_steps = 4, ["20"], 2, 10
        args.eval_episodes, args.rounds, args.batch_size, args.budget_s = 2, 1, 8, 5.0
    base_steps = _steps_per_task(args.base_steps, args.tasks)
    base_policies = dict(v.split("=", 1) for v in args.base_policy if "=" in v)
    if len(base_policies) != len(args.base_policy) or not set(base_policies) <= set(args.tasks):
        raise SystemExit(f"--base-policy takes TASK=DIR for tasks among {args.tasks}; got {args.base_policy}")
    torch.set_num_threads(1)

    from robot_learn.envs.conditions import EnvConditions

    demo_conditions = EnvConditions.of(args.demo_spread)
    deployed = EnvConditions.of(args.spread, args.disturbances, args.disturbance_probability)

    from robot_learn.data import EpisodeStore, WindowSampler
    from robot_learn.envs import SimRobot, task_spec
    from robot_learn.envs.demos import collect_demos
    from robot_learn.evaluation import evaluate
    from robot_learn.loops.methods import make_loop_config, make_method
    from robot_learn.loops.operators import SimulatedOperator
    from robot_learn.loops.round import LoopConfig, LoopContext
    from robot_learn.loops.rounds import plot_rounds
    from robot_learn.policies import diffusion_state_config, load_policy
    from robot_learn.policies.checkpoint import resolve_policy_dir
    from robot_learn.training import TrainConfig, Trainer, build_policy_for_view

    out = Path(args.out)
    print("config:", json.dumps(vars(args)))
    results: dict[str, dict[str, list[dict]]] = {}
    t_all = time.perf_counter()
    for task in args.tasks:
        max_steps = task_spec(task).max_steps
        tdir = out / task
        demo_path = tdir / "demos.zarr"
        if not demo_path.exists():
            collect_demos(task, args.demos, demo_path, cameras=(), progress_bar=False, conditions=demo_conditions)
        demos = EpisodeStore.open(demo_path).view(success=True)
        train_cfg = TrainConfig(steps=base_steps[task], batch_size=args.batch_size, lr=args.lr, warmup_steps=50, ckpt_every=0,
                                log_every=50, device="cpu", num_threads=1, progress_bar=False,
                                out_dir=str(tdir / "base"))
        if task in base_policies:
            base_dir = resolve_policy_dir(base_policies[task])
        else:
            policy = build_policy_for_view(diffusion_state_config(), demos)
            sampler = WindowSampler(demos, obs_keys=policy.training_obs_keys, obs_horizon=policy.obs_horizon,
                                    action_horizon=policy.action_horizon, batch_size=args.batch_size, seed=0)
            base_dir = Path(Trainer(policy, sampler, train_cfg).fit()["final_policy_dir"])
        print(f"\n{task}: base {base_policies.get(task) or f'trained {base_steps[task]} steps'} on "
              f"{demos.num_episodes} demos ({demo_conditions.describe()})")
        for where, conditions in (("demos' spread", demo_conditions), ("deployed", deployed)):
            # the seeds every round evaluates on (LoopConfig.eval_seed), so round 0 is comparable
            summary = evaluate(load_policy(base_dir), task, episodes=args.eval_episodes, workers=1, videos=0,
                               vectorization="sync", conditions=conditions, seed=LoopConfig.eval_seed).summary
            print(f"{task}: base success {where} ({conditions.describe()}): {summary.success_rate:.1%} "
                  f"[{summary.ci_low:.1%}, {summary.ci_high:.1%}]")
        # round 0 of the curves: the base where it is deployed (the loop's last summary)
        base = {"round": 0, "success_rate": summary.success_rate, "ci_low": summary.ci_low,
                "ci_high": summary.ci_high,
                "human_seconds": 0.0}
        results[task] = {}
        for method in args.methods:
            mdir = tdir / method
            operator = SimulatedOperator(task, budget_s=args.budget_s, seed=1)
            critic = {"critic_steps": 300} if method in ("help_curated", "recap") else {}
            loop_cfg = make_loop_config(method, episodes=args.episodes, train_steps=args.train_steps,
                                        eval_episodes=args.eval_episodes, widen_range=not args.no_widen, **critic)

            def make_robot():
                robot = SimRobot(task, cameras=(), max_steps=max_steps, conditions=deployed)
                robot.connect()
                return robot

            def make_operator(r, operator=operator):
                operator.new_round()
                return operator

            ctx = LoopContext(mdir, task, demos, make_robot, make_operator,
                              dataclasses.replace(train_cfg, out_dir=str(mdir), lr=args.finetune_lr or args.lr),
                              max_steps=max_steps, base_policy_dir=base_dir, conditions=deployed)
            loop = make_method(ctx, loop_cfg)
            history, policy_dir, t0 = [base], base_dir, time.perf_counter()
            for r in range(1, args.rounds + 1):
                policy_dir, numbers = loop.run_round(r, policy_dir)
                history.append(numbers)
                print(f"  {method:17s} round {r}: success {numbers['success_rate']:.1%} "
                      f"[{numbers['ci_low']:.1%}, {numbers['ci_high']:.1%}]  human {numbers['human_seconds']:.1f} s  "
                      f"interventions/ep {numbers['interventions_per_episode']:.2f}")
            print(f"  {method:17s} {time.perf_counter() - t0:.0f} s")
            results[task][method] = history
        plot_rounds(tdir, results[task])

    print("\nfinal success (round %d), side by side:" % args.rounds)
    header = f"{'task':12s}" + "".join(f"{m:>20s}" for m in args.methods)
    print(header)
    for task, by_method in results.items():
        cells = []
        for m in args.methods:
            last = by_method[m][-1]
            cells.append(f"{last['success_rate']:.0%} [{last['ci_low']:.0%},{last['ci_high']:.0%}]")
        print(f"{task:12s}" + "".join(f"{c:>20s}" for c in cells))
    for control in ("autonomous", "more_demos"):
        if control not in args.methods:
            continue
        print(f"\nratio of final success to the {control} control (per task; median over tasks); "
              "intervals apart: a HITL method's 95% interval entirely above the control's:")
        for m in args.methods:
            ratios = [by[m][-1]["success_rate"] / max(by[control][-1]["success_rate"], 1e-9)
                      for by in results.values()]
            apart = ["yes" if by[m][-1]["ci_low"] > by[control][-1]["ci_high"] else "no" for by in results.values()]
            print(f"  {m:17s} {' '.join(f'{x:.2f}' for x in ratios)}; median {statistics.median(ratios):.2f}; "
                  f"apart {' '.join(apart)}")
    (out / "results.json").write_text(json.dumps(results, indent=2))
    print(f"\ntotal {time.perf_counter() - t_all:.0f} s; results in {out / 'results.json'}")


def _steps_per_task(values: list[str], tasks: list[str]) -> dict[str, int]:
    """``["800"]`` -> 800 for every task; ``["stack=2000", "peg_insert=4000"]`` -> per task."""
    if len(values) == 1 and "=" not in values[0]:
        return {task: int(values[0]) for task in tasks}
    pairs = dict(v.split("=", 1) for v in values if "=" in v)
    if len(pairs) != len(values) or set(pairs) != set(tasks):
        raise SystemExit(f"--base-steps needs one number or TASK=STEPS for each of {tasks}; got {values}")
    return {task: int(pairs[task]) for task in tasks}


if __name__ == "__main__":
    main()
