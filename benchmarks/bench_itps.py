"""Latency per action chunk of the ITPS steering samplers against plain sampling, batch 1.

Times ``predict_action_chunk`` (plain) and each ITPS sampler (random, post_hoc,
biased_init, guided, stochastic; ``robot_learn.policies.diffusion.itps``) steering the
state preset toward a point, and prints the median with a 95% confidence interval
(distribution-free, from order statistics) and the median's ratio to plain sampling.
Weights are random: latency does not depend on them, alignment does (this script
measures no alignment; bench_itps_modes.py does, on a trained policy). Samplers are
interleaved run by run so that load from other processes hits them alike.

    .venv/bin/python benchmarks/bench_itps.py [--runs 30] [--warmup 3] [--threads 1] [--scheduler ddim]
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import sys
import time

import numpy as np
import torch

from robot_learn.policies import diffusion_state_config, make_policy
from robot_learn.policies.diffusion.itps import ITPS_SAMPLERS, ITPSSettings, SteeredSampler
from robot_learn.policies.steering_objectives import PointObjective

TARGET = (0.25, 0.1, 0.05)


def median_interval(values: np.ndarray, z: float = 1.96) -> tuple[float, float, float]:
    """Median and its ~95% confidence interval from the order statistics at n/2 -+ z sqrt(n)/2."""
    ordered = np.sort(values)
    n = len(ordered)
    low = max(int(math.floor(n / 2 - z * math.sqrt(n) / 2)), 0)
    high = min(int(math.ceil(n / 2 + z * math.sqrt(n) / 2)), n - 1)
    return float(np.median(ordered)), float(ordered[low]), float(ordered[high])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--scheduler", default="ddim", choices=("ddim", "dpmsolver"))
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    config = diffusion_state_config(inference_scheduler=args.scheduler)
    policy = make_policy("diffusion", config, None).eval()
    objective = PointObjective(TARGET, action_dim=config.action_dim, start=config.obs_horizon - 1)
    settings = ITPSSettings()
    predictors = {"plain": policy.predict_action_chunk,
                  **{name: SteeredSampler(policy, objective, ITPSSettings(sampler=name)) for name in ITPS_SAMPLERS}}
    obs = {key: torch.randn(1, config.obs_horizon, dim) for key, dim in config.state_dims.items()}
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    params = sum(p.numel() for p in policy.parameters()) / 1e6
    print(f"torch {torch.__version__}, {platform.processor() or platform.machine()}, {os.cpu_count()} cores "
          f"(load {load:.1f}), threads={torch.get_num_threads()}, batch=1, runs={args.runs} after {args.warmup} warmup")
    print(f"state preset: obs={policy.obs_shapes} down_dims={config.down_dims} To/Ta={config.obs_horizon}/"
          f"{config.action_horizon} params={params:.2f}M, {args.scheduler}-{config.num_inference_steps}; "
          f"ITPS: post_hoc {settings.num_samples} samples, biased_init from {settings.bias_level:g} of the schedule, "
          f"guided scale {settings.guided_scale:g}, stochastic scale {settings.stochastic_scale:g} x "
          f"{settings.inner_steps} inner steps; objective point {TARGET}")

    generator = torch.Generator().manual_seed(0)
    times: dict[str, list[float]] = {name: [] for name in predictors}
    with torch.no_grad():
        for run in range(args.warmup + args.runs):
            for name, predict in predictors.items():
                start = time.perf_counter()
                predict(obs, generator=generator)
                if run >= args.warmup:
                    times[name].append((time.perf_counter() - start) * 1000.0)
    plain = np.median(times["plain"])
    print(f"\n  {'sampler':<13}{'median ms':>10}{'95% CI ms':>20}{'x plain':>9}")
    for name, values in times.items():
        median, low, high = median_interval(np.asarray(values))
        print(f"  {name:<13}{median:10.1f}{f'[{low:.1f}, {high:.1f}]':>20}{median / plain:9.2f}")


if __name__ == "__main__":
    main()
