"""Diffusion-policy inference latency per action chunk at batch 1.

Measures ``predict_action_chunk`` (observation encoding + all denoising steps) for
the state and image presets with DDPM-100, DDIM-10 and DPM-Solver-5, and with the
MIP head's two passes (the same network built with ``head="mip"``), and prints p50/p95
plus each row's p50 relative to DDPM-100 and to DDIM-10. Weights are random (latency
does not depend on them). Goal: image preset with 10 steps under 60 ms p50 on 2 threads.

    .venv/bin/python benchmarks/bench_inference.py [--runs 50] [--warmup 5] [--threads 2]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import numpy as np
import torch

from robot_learn.policies import diffusion_image_config, diffusion_state_config, make_policy

SAMPLERS = (("DDPM-100", "ddpm", 100), ("DDIM-10", "ddim", 10), ("DPM-Solver-5", "dpmsolver", 5), ("MIP-2", "mip", 2))
INSTRUCTIONS = ["put the red cube on the blue cube", "take the green cube out of the bin", "insert the peg into the hole"]


def observation(config) -> dict:
    obs = {key: torch.randn(1, config.obs_horizon, dim) for key, dim in config.state_dims.items()}
    if config.camera_names:
        size = config.image_size
        obs["images"] = {
            cam: torch.randint(0, 256, (1, config.obs_horizon, size, size, 3), dtype=torch.uint8) for cam in config.camera_names
        }
    if config.text_encoder != "none":
        obs["instruction"] = [INSTRUCTIONS[0]]
    return obs


def time_samplers(policies: dict, obs, runs: int, warmup: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Wall-clock and process-CPU milliseconds per chunk for every sampler; ``policies``
    maps a head ("diffusion", "mip") to its policy, and each row runs on its head's.

    Samplers are interleaved run by run, so load from other processes hits them
    alike and their ratios stay fair. CPU time (summed over torch's threads) is
    reported too: it is less sensitive to competing processes than wall-clock time.
    """
    generator = torch.Generator().manual_seed(0)
    wall: dict[str, list[float]] = {label: [] for label, _, _ in SAMPLERS}
    cpu: dict[str, list[float]] = {label: [] for label, _, _ in SAMPLERS}
    for run in range(warmup + runs):
        for label, kind, steps in SAMPLERS:
            policy = policies["mip" if kind == "mip" else "diffusion"]
            policy.set_inference_scheduler(kind, steps)  # untimed: building the diffusers scheduler
            start, start_cpu = time.perf_counter(), time.process_time()
            policy.predict_action_chunk(obs, generator=generator)
            if run >= warmup:
                wall[label].append((time.perf_counter() - start) * 1000.0)
                cpu[label].append((time.process_time() - start_cpu) * 1000.0)
    return {label: (np.asarray(wall[label]), np.asarray(cpu[label])) for label in wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # lines appear as measured, even when piped
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    presets = {"state": diffusion_state_config(), "image": diffusion_image_config()}
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"torch {torch.__version__}, {platform.processor() or platform.machine()}, {os.cpu_count()} cores "
          f"(load {load:.1f}), threads={torch.get_num_threads()}, batch=1, runs={args.runs} after {args.warmup} warmup")
    for name, config in presets.items():
        policy = make_policy("diffusion", config, None, instructions=INSTRUCTIONS).eval()
        params = sum(p.numel() for p in policy.parameters()) / 1e6
        print(f"\n[{name}] obs={policy.obs_shapes} text={config.text_encoder} denoiser={config.denoiser} "
              f"down_dims={config.down_dims} vision_channels={config.vision_channels if config.camera_names else '-'} "
              f"To/Ta={config.obs_horizon}/{config.action_horizon} params={params:.2f}M")
        mip = make_policy("diffusion", policy.config.with_changes(head="mip"), None).eval()
        mip.load_state_dict(policy.state_dict())  # the same network, run as MIP's two passes
        obs = observation(config)
        results = time_samplers({"diffusion": policy, "mip": mip}, obs, args.runs, args.warmup)
        with torch.no_grad():
            encode = []
            for _ in range(args.runs):
                start = time.perf_counter()
                policy.obs_encoder(obs)
                encode.append(time.perf_counter() - start)
        base, ddim = np.median(results["DDPM-100"][0]), np.median(results["DDIM-10"][0])
        print(f"  {'sampler':<14}{'p50 ms':>9}{'p95 ms':>9}{'p50 / DDPM-100':>16}{'p50 / DDIM-10':>15}{'cpu p50 ms':>12}")
        for label, (wall, cpu) in results.items():
            print(f"  {label:<14}{np.median(wall):9.2f}{np.percentile(wall, 95):9.2f}{np.median(wall) / base:16.3f}"
                  f"{np.median(wall) / ddim:15.3f}{np.median(cpu):12.2f}")
        print(f"  {'encoder only':<14}{np.median(encode) * 1000:9.2f}{np.percentile(encode, 95) * 1000:9.2f}")
        if name == "image":
            p50 = np.median(results["DDIM-10"][0])
            print(f"  goal: image DDIM-10 p50 < 60 ms -> {p50:.1f} ms ({'met' if p50 < 60 else 'NOT met'})")


if __name__ == "__main__":
    main()
