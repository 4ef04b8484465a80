"""Our scripted PushT pusher on held-out seeds: success (Wilson 95%) and time per episode.

    OMP_NUM_THREADS=1 .venv-bench/bin/python benchmarks/bench_pusht_expert.py [--episodes 50] [--start 0] [--noise 0]

Seeds start at 2,000,000: the tests use small seeds, demos start at 0 and
policy evaluation (``bench_external.py``) at 1,000,000. Time per episode is
process CPU time (one thread), so it stays comparable on a loaded machine; the
wall time is printed beside it.
"""

from __future__ import annotations

import argparse
import statistics
import time

SEED = 2_000_000


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--episodes", type=int, default=50)
    p.add_argument("--start", type=int, default=0, help="first seed: 2,000,000 + start (to split long runs)")
    p.add_argument("--noise", type=float, default=0.0, help="expert target noise (std = noise * 10 px)")
    p.add_argument("--max-steps", type=int, default=300)
    args = p.parse_args()

    from robot_learn.envs import make_env, make_expert
    from robot_learn.evaluation import wilson_interval

    env = make_env("pusht", cameras=(), max_steps=args.max_steps)
    wins, lengths, cpu, wall = 0, [], [], []
    first = SEED + args.start
    for seed in range(first, first + args.episodes):
        c0, w0 = time.process_time(), time.perf_counter()
        expert = make_expert("pusht", noise=args.noise, seed=seed)
        obs, _ = env.reset(seed=seed)
        expert.reset(env)
        for step in range(1, args.max_steps + 1):
            obs, _, terminated, truncated, info = env.step(expert.act(obs, env))
            if terminated or truncated:
                break
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
        wins += bool(info["success"])
        lengths.append(step)
        print(f"seed {seed}: {'success' if info['success'] else 'failure'} in {step} steps, "
              f"progress {info['progress']:.3f}, {cpu[-1]:.2f} s CPU", flush=True)
    env.close()
    lo, hi = wilson_interval(wins, args.episodes)
    print(f"\npusht expert, noise {args.noise}, seeds {first}..{first + args.episodes - 1}: "
          f"{wins}/{args.episodes} = {wins / args.episodes:.1%}, "
          f"95% CI [{lo:.1%}, {hi:.1%}]; mean length {statistics.mean(lengths):.0f} steps; "
          f"median {statistics.median(cpu):.2f} s CPU per episode (max {max(cpu):.2f}), "
          f"median {statistics.median(wall):.2f} s wall")


if __name__ == "__main__":
    main()
