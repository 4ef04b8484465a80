"""HITL methods side by side under the simulated operator, same human-seconds budget.

For each task (default: stack and peg_insert, two task families) a weak base policy
is trained on expert demos (few steps: ~20-50% success), then each method runs
``--rounds`` rounds of collect -> curate -> fine-tune -> evaluate from that base:
HG-DAgger, HG-DAgger + curated rollouts (HELP), RECAP, and a no-operator control that adds
the same number of autonomous rollouts. Prints success per round with 95%
intervals, human seconds, and the final success of each method relative to the control.

    .venv/bin/python benchmarks/bench_hitl.py --small        # minutes: plumbing check
    .venv/bin/python benchmarks/bench_hitl.py                # the full comparison
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
    ap.add_argument("--tasks", nargs="+", default=["stack", "peg_insert"])
    ap.add_argument("--methods", nargs="+", default=["hgdagger", "help_curated", "recap", "autonomous"])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--demos", type=int, default=30)
    ap.add_argument("--base-steps", nargs="+", default=["800"],
                    help="base training steps: one number for every task, or TASK=STEPS pairs "
                         "(e.g. stack=2000 peg_insert=4000) to put each family's base at 20-50%%")
    ap.add_argument("--lr", type=float, default=1e-3, help="base training (the default recipe's lr)")
    ap.add_argument("--finetune-lr", type=float, default=None, help="per-round fine-tuning lr (default: --lr)")
    ap.add_argument("--episodes", type=int, default=10, help="collected per round")
    ap.add_argument("--train-steps", type=int, default=400, help="fine-tune steps per round")
    ap.add_argument("--eval-episodes", type=int, default=30)
    ap.add_argument("--budget-s", type=float, default=40.0, help="human seconds per round")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--out", default="outputs/bench_hitl")
    ap.add_argument("--small", action="store_true", help="tiny budget: checks the plumbing only")
    args = ap.parse_args()
    if args.small:
        args.demos, args.base_steps, args.episodes, args.train_steps = 4, ["20"], 2, 10
        args.eval_episodes, args.rounds, args.batch_size, args.budget_s = 2, 1, 8, 5.0
    base_steps = _steps_per_task(args.base_steps, args.tasks)
    torch.set_num_threads(1)

    from robot_learn.data import EpisodeStore, WindowSampler
    from robot_learn.envs import make_sim_robot, task_spec
    from robot_learn.envs.demos import collect_demos
    from robot_learn.evaluation import evaluate
    from robot_learn.loops.methods import make_loop_config, make_method
    from robot_learn.loops.operators import SimulatedOperator
    from robot_learn.loops.round import LoopContext
    from robot_learn.loops.rounds import plot_rounds
    from robot_learn.policies import diffusion_state_config, load_policy
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
            collect_demos(task, args.demos, demo_path, cameras=(), progress_bar=False)
        demos = EpisodeStore.open(demo_path).view(success=True)
        train_cfg = TrainConfig(steps=base_steps[task], batch_size=args.batch_size, lr=args.lr, warmup_steps=50, ckpt_every=0,
                                log_every=50, device="cpu", num_threads=1, progress_bar=False,
                                out_dir=str(tdir / "base"))
        policy = build_policy_for_view(diffusion_state_config(), demos)
        sampler = WindowSampler(demos, obs_keys=policy.training_obs_keys, obs_horizon=policy.obs_horizon,
                                action_horizon=policy.action_horizon, batch_size=args.batch_size, seed=0)
        base_dir = Path(Trainer(policy, sampler, train_cfg).fit()["final_policy_dir"])
        s = evaluate(load_policy(base_dir), task, episodes=args.eval_episodes, workers=1, videos=0,
                     vectorization="sync").summary
        base = {"round": 0, "success_rate": s.success_rate, "ci_low": s.ci_low, "ci_high": s.ci_high,
                "human_seconds": 0.0}
        print(f"\n{task}: base success {s.success_rate:.1%} [{s.ci_low:.1%}, {s.ci_high:.1%}]")
        results[task] = {}
        for method in args.methods:
            mdir = tdir / method
            operator = SimulatedOperator(task, budget_s=args.budget_s, seed=1)
            critic = {"critic_steps": 300} if method in ("help_curated", "recap") else {}
            loop_cfg = make_loop_config(method, episodes=args.episodes, train_steps=args.train_steps,
                                        eval_episodes=args.eval_episodes, **critic)

            def make_robot():
                robot = make_sim_robot(task, cameras=(), max_steps=max_steps)
                robot.connect()
                return robot

            def make_operator(r, operator=operator):
                operator.new_round()
                return operator

            ctx = LoopContext(mdir, task, demos, make_robot, make_operator,
                              dataclasses.replace(train_cfg, out_dir=str(mdir), lr=args.finetune_lr or args.lr),
                              max_steps=max_steps, base_policy_dir=base_dir)
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
    if "autonomous" in args.methods:
        print("\nratio of final success to the no-operator control (per task; median over tasks):")
        for m in args.methods:
            ratios = [by[m][-1]["success_rate"] / max(by["autonomous"][-1]["success_rate"], 1e-9)
                      for by in results.values()]
            print(f"  {m:17s} {' '.join(f'{x:.2f}' for x in ratios)}; median {statistics.median(ratios):.2f}")
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
