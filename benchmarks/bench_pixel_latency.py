"""Latency per action chunk of the pixel presets at batch 1, beside the state preset.

Each preset is built from its YAML in ``configs/policy/`` with random weights (latency
does not depend on them) and timed on ``predict_action_chunk`` from raw observations:
for the pixel presets that includes the frame encoder over every camera and every
observation step. Goal (pixel presets): p50 <= 30 ms on 2 threads.

    .venv/bin/python benchmarks/bench_pixel_latency.py [--runs 100] [--threads 2]
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

import numpy as np
import torch
from hydra.utils import instantiate
from omegaconf import OmegaConf

from robot_learn.envs.base_env import SCENE_LABELS
from robot_learn.policies import make_policy

PRESETS = {"diffusion_state": "diffusion", "diffusion_pixels": "diffusion",
           "discrete_diffusion_pixels": "discrete_diffusion"}
INSTRUCTION = "put the red cube in the blue bin"
CONFIGS = Path(__file__).resolve().parent.parent / "configs" / "policy"


def build(preset: str):
    config = instantiate(OmegaConf.load(CONFIGS / f"{preset}.yaml"))
    if config.frame_encoder:
        config = config.with_changes(frame_encoder={**config.frame_encoder, "label_names": list(SCENE_LABELS),
                                                    "vocab": sorted(set(INSTRUCTION.split()))})
    return make_policy(PRESETS[preset], config, None, instructions=[INSTRUCTION]).eval()


def observation(policy) -> dict:
    horizon = policy.obs_horizon
    obs: dict = {"instruction": [INSTRUCTION]}
    for key, shape in policy.obs_shapes.items():
        if key.startswith("images/"):
            obs.setdefault("images", {})[key.split("/", 1)[1]] = torch.randint(0, 256, (1, horizon, *shape),
                                                                              dtype=torch.uint8)
        else:
            obs[key] = torch.randn(1, horizon, *shape)
    return obs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"bench_pixel_latency: torch {torch.__version__}, {args.threads} threads, {args.runs} runs, batch 1, "
          f"{platform.processor() or platform.machine()}")
    print("| preset | parameters (M) | observation keys | p50 (ms) | p95 (ms) |")
    print("| --- | --- | --- | --- | --- |")
    for preset in PRESETS:
        policy = build(preset)
        obs = observation(policy)
        times = []
        with torch.no_grad():
            for i in range(args.warmup + args.runs):
                t0 = time.perf_counter()
                policy.predict_action_chunk(obs)
                if i >= args.warmup:
                    times.append((time.perf_counter() - t0) * 1000.0)
        n_params = sum(p.numel() for p in policy.parameters()) / 1e6
        print(f"| {preset} | {n_params:.2f} | {', '.join(policy.obs_shapes)} | {np.median(times):.1f} | "
              f"{np.percentile(times, 95):.1f} |")


if __name__ == "__main__":
    main()
