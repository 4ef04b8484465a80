"""ReGuide at test time: a weak base state policy against the same policy sampled with
phase-conditioned guidance (PCG), on the same held-out seeds.

1. demos: ``--demos`` expert episodes of ``--task`` (collected into ``--out`` if missing);
2. base: the state preset trained ``--train-steps`` on them (or ``--policy-dir``);
3. base rollouts: ``--rollouts`` episodes of the base policy alone (successes and failures);
4. the guide: latent dynamics on demos + rollouts, phase prototypes from the demos;
5. evaluation: the base, then PCG at each ``--scales``, on seeds ``--seed``.. (``--episodes``),
   the same sampling-noise seed for every arm. Prints success with its 95% Wilson interval,
   the ratio to the base, and the share of chunks PCG guided.

    .venv/bin/python benchmarks/bench_reguide.py [--task stack] [--demos 30] [--train-steps 1500]
        [--rollouts 50] [--episodes 50] [--scales 0.05 0.2] [--out outputs/bench_reguide]

Measured on stack (docs/benchmarks.md, "Guided recovery"): test-time PCG does not lift a
28% base. The FT, FS and matched-control arms run through ``robot-learn improve loop=guided``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from types import SimpleNamespace

import torch
from train_settings import demos_and_state_policy, start_run  # benchmarks/ is on sys.path when run as a script

from robot_learn.data import EpisodeStore
from robot_learn.envs import make_sim_robot
from robot_learn.envs.registry import task_spec
from robot_learn.evaluation import evaluate
from robot_learn.loops.sources import run_session
from robot_learn.policies import load_policy
from robot_learn.policies.diffusion.phase_guidance import PCGSettings
from robot_learn.policies.phase_prototypes import PhaseSettings
from robot_learn.training.phase_guide import build_phase_guide, load_phase_guide


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="stack")
    parser.add_argument("--demos", type=int, default=30)
    parser.add_argument("--train-steps", type=int, default=1500)
    parser.add_argument("--policy-dir", default="")
    parser.add_argument("--rollouts", type=int, default=50)
    parser.add_argument("--episodes", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1_000_000)
    parser.add_argument("--max-steps", type=int, default=None)
    parser.add_argument("--scales", type=float, nargs="+", default=[0.05, 0.2])
    parser.add_argument("--max-timestep", type=int, default=20)
    parser.add_argument("--phases", type=int, default=4)
    parser.add_argument("--horizon", type=int, default=8)
    parser.add_argument("--guide-steps", type=int, default=2000)
    args, out = start_run(parser, "outputs/bench_reguide")
    t0 = time.perf_counter()

    demos, policy_dir = demos_and_state_policy(out, args.task, args.demos, args.train_steps, args.threads,
                                               args.policy_dir)
    policy = load_policy(policy_dir)
    t_base = time.perf_counter()

    rollouts_path = out / "base_rollouts.zarr"

    def make_robot():
        robot = make_sim_robot(args.task, cameras=(), max_steps=args.max_steps)
        robot.connect()
        return robot

    ctx = SimpleNamespace(make_robot=make_robot, run_dir=out, rate_hz=10.0, task=args.task,
                          max_steps=args.max_steps or task_spec(args.task).max_steps)
    shutil.rmtree(rollouts_path, ignore_errors=True)  # a rerun's rollouts start again, not appended to
    store = EpisodeStore.create(rollouts_path)
    try:
        run_session(ctx, 0, policy, str(policy_dir), store, None, args.rollouts, seed=50_000)
    finally:
        store.close()
    rollouts = EpisodeStore.open(rollouts_path).view()
    record = build_phase_guide(demos, out / "guide", rollouts=[rollouts], horizon=args.horizon,
                               steps=args.guide_steps, phase_settings=PhaseSettings(phases=args.phases,
                                                                                    delta_steps=args.horizon))
    print(f"guide: {json.dumps({k: record[k] for k in ('demos', 'rollouts', 'rollout_successes', 'dynamics')})}")
    t_guide = time.perf_counter()

    common = dict(episodes=args.episodes, seed=args.seed, workers=1, videos=0, max_steps=args.max_steps,
                  vectorization="sync", generator_seed=0)
    base = evaluate(policy, args.task, **common).summary
    rows = [("base", base, "", time.perf_counter() - t_guide)]
    for scale in args.scales:
        t = time.perf_counter()
        pcg = load_phase_guide(out / "guide", policy, args.task, PCGSettings(scale=scale,
                                                                             max_timestep=args.max_timestep))
        s = evaluate(policy, args.task, predict=pcg, **common).summary
        rows.append((f"PCG c={scale:g}", s, f"{pcg.guided_chunks}/{pcg.chunks}", time.perf_counter() - t))
    print(f"\n{args.task}, {args.episodes} held-out seeds from {args.seed}; base {policy_dir}")
    print("| arm | success | 95% Wilson CI | x base | guided chunks | eval wall s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, s, guided, wall in rows:
        ratio = f"{s.success_rate / base.success_rate:.2f}" if base.success_rate else "-"
        print(f"| {name} | {s.success_rate:.0%} ({s.successes}/{s.episodes}) | [{s.ci_low:.1%}, {s.ci_high:.1%}] | "
              f"{ratio} | {guided or '-'} | {wall:.0f} |")
    print(f"\nwall: base {t_base - t0:.0f} s, rollouts + guide {t_guide - t_base:.0f} s, "
          f"total {time.perf_counter() - t0:.0f} s (upper bounds on a shared CPU)")


if __name__ == "__main__":
    main()
