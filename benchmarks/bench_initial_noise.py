"""Success against where the sampler starts, for one trained diffusion policy, paired on the same seeds.

A diffusion policy's chunk is a deterministic function of its initial noise under DDIM and
DPM-Solver, so an episode's outcome can turn on that draw alone. Each arm evaluates the same
weights on the same held-out seed sets; the first arm is the baseline of the paired counts:

- ``noise:S`` the sampler starts from S times Gaussian noise (``init_noise_scale``; 1 is plain
  sampling, 0 the deterministic path from zero noise);
- ``noise:S:gG`` the same with the sampling noise's generator seeded G instead of 0 (how much of
  the outcome is the draw);
- ``mean:K`` each chunk the mean, in the normalised action space, of K chunks sampled from
  independent noise (K times the denoiser's batch).

    .venv/bin/python benchmarks/bench_initial_noise.py outputs/train/<run>/encoder_finetune \
        [--task bin_place] [--sets 1000000:50 1100000:100 1200000:200] [--arms noise:1 noise:1:g1 noise:0 ...]

It prints each arm's successes with a 95% Wilson interval, and against the first arm the
episodes won and lost and an exact McNemar p.
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import torch

from bench_wm_improve import mcnemar  # noqa: E402  (benchmarks/ is on sys.path when run as a script)
from robot_learn.evaluation import evaluate
from robot_learn.evaluation.metrics import wilson_interval
from robot_learn.policies import load_policy
from robot_learn.policies.checkpoint import resolve_policy_dir

DEFAULT_SETS = ["1000000:50", "1100000:100", "1200000:200"]
DEFAULT_ARMS = ["noise:1", "noise:1:g1", "noise:0", "noise:0.5", "mean:8"]


def parse_arm(text: str) -> tuple[float, int, int]:
    """``(init_noise_scale, generator seed, chunks averaged)`` of an arm; exits naming the valid forms."""
    parts = text.split(":")
    try:
        if parts[0] == "noise" and len(parts) in (2, 3):
            seed = int(parts[2].removeprefix("g")) if len(parts) == 3 and parts[2].startswith("g") else 0
            if len(parts) == 3 and not parts[2].startswith("g"):
                raise ValueError
            scale = float(parts[1])
            if scale >= 0 and math.isfinite(scale):
                return scale, seed, 1
        if parts[0] == "mean" and len(parts) == 2 and int(parts[1]) >= 1:
            return 1.0, 0, int(parts[1])
    except ValueError:
        pass
    sys.exit(f"bench_initial_noise.py: error: arm '{text}': valid forms noise:S (S >= 0), noise:S:gG, mean:K (K >= 1)")


def mean_of_chunks(policy, count: int):
    """A ``predict`` for :func:`evaluate`: the mean of ``count`` sampled chunks per observation."""

    @torch.no_grad()
    def predict(obs, generator=None):
        features, text = policy.encode(obs)
        batch = features.shape[0]
        repeat = lambda t: None if t is None else t.repeat_interleave(count, 0)  # noqa: E731
        noise = torch.randn((batch * count, policy.action_horizon, policy.action_dim), generator=generator)
        chunks = policy.denoise(noise.to(features.device), repeat(features), repeat(text), generator=generator)
        chunk = chunks.view(batch, count, *chunks.shape[1:]).mean(1)
        return policy.action_normalizer.unnormalize(policy.clamp_chunk(chunk))
    return predict


def run_arm(policy, arm: str, task: str, sets: list[tuple[int, int]], workers: int,
            max_steps: int | None) -> list[bool]:
    scale, seed, count = parse_arm(arm)
    policy.config = policy.config.with_changes(init_noise_scale=scale)
    predict = mean_of_chunks(policy, count) if count > 1 else None
    outcomes: list[bool] = []
    for first, episodes in sets:
        result = evaluate(policy, task, episodes=episodes, seed=first, workers=workers, videos=0,
                          vectorization="sync", generator_seed=seed, predict=predict, max_steps=max_steps)
        outcomes += [bool(e.success) for e in result.episodes]
    return outcomes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoint")
    parser.add_argument("--task", default="bin_place")
    parser.add_argument("--sets", nargs="+", default=DEFAULT_SETS, help="FIRST_SEED:EPISODES held-out seed sets")
    parser.add_argument("--arms", nargs="+", default=DEFAULT_ARMS)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--max-steps", type=int, default=None, help="episode length (default: the task's)")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    for arm in args.arms:
        parse_arm(arm)  # every arm checked before the first runs
    try:
        sets = [(int(a), int(b)) for a, b in (s.split(":") for s in args.sets)]
        if any(first < 0 or episodes < 1 for first, episodes in sets):
            raise ValueError
    except ValueError:
        sys.exit(f"bench_initial_noise.py: error: --sets {args.sets}: each must be FIRST_SEED:EPISODES, "
                 "e.g. 1000000:50")
    torch.set_num_threads(args.threads)
    try:
        policy = load_policy(resolve_policy_dir(args.checkpoint), expected_type="diffusion").eval()
    except (OSError, ValueError) as err:
        sys.exit(f"bench_initial_noise.py: error: {args.checkpoint}: {err}")
    if policy.config.head != "diffusion" or policy.config.inference_scheduler == "ddpm":
        sys.exit(f"bench_initial_noise.py: error: {args.checkpoint} samples with head '{policy.config.head}' and "
                 f"'{policy.config.inference_scheduler}'; the arms need a diffusion head with ddim or dpmsolver")
    n = sum(episodes for _, episodes in sets)
    print(f"{args.checkpoint} on {args.task}: {n} held-out episodes ({' '.join(args.sets)}), "
          f"{policy.config.inference_scheduler} {policy.num_inference_steps}, {args.threads} threads")
    base: list[bool] | None = None
    for arm in args.arms:
        t0 = time.perf_counter()
        outcomes = run_arm(policy, arm, args.task, sets, args.workers, args.max_steps)
        wins = sum(outcomes)
        low, high = wilson_interval(wins, n)
        line = f"{arm:>12}: {wins}/{n} = {wins / n:.1%} [{low:.1%}, {high:.1%}]"
        if base is None:
            base = outcomes
        else:
            won = sum(b and not a for a, b in zip(base, outcomes))
            lost = sum(a and not b for a, b in zip(base, outcomes))
            line += f"; against {args.arms[0]}: won {won}, lost {lost}, McNemar p = {mcnemar(won, lost):.3g}"
        print(f"{line} ({time.perf_counter() - t0:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
