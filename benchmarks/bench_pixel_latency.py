"""Latency per action chunk of the pixel presets at batch 1, beside the state preset.

Each preset is built from its YAML in ``configs/policy/`` with random weights (latency
does not depend on them) and timed on ``predict_action_chunk`` from raw observations:
for the pixel presets that includes the frame encoder over every camera and every
observation step. Goal (pixel presets): p50 <= 30 ms on 2 threads.

``--compare`` times each diffusion preset three ways: ``plain`` (the ``nn.Conv1d``
U-Net), ``fast`` (``fast_inference``, ``MatmulConv1d``) and ``compiled`` (``fast`` plus
``compile_inference``: the denoiser and the frame encoder through ``torch.compile``;
compiled before timing), and each discrete-diffusion preset two ways, ``plain`` and
``compiled`` (each decoding round, the ensemble's members in one graph, and the frame
encoder). The order rotates run by run in one process so that load from other jobs hits
all alike; it prints wall p50/p95, the ratio to plain, process-CPU p50, and the largest
action difference to plain (0 for the VLA: the same tokens, decoded from one seed).

``--samplers ddim:10 ddim:5 dpmsolver:3 mip vla ensemble:4`` times ``diffusion_pixels`` under
each sampler and step count (``mip``: the ``diffusion_mip_pixels`` preset's two passes; ``vla``
and ``ensemble``: ``discrete_diffusion_pixels`` and its ensemble preset, ``:K`` decoding K
rounds), interleaved in one process with the order rotating, and
prints each arm's p50 / p95 and its ratio to the first arm. ``--compile`` runs every
arm through ``compile_inference`` (compiled before timing); a diffusion arm with ``+bf16``
(e.g. ``mip+bf16``) also with ``compile_bf16``.

    .venv/bin/python benchmarks/bench_pixel_latency.py [--runs 100] [--threads 2] [--compare]
    .venv/bin/python benchmarks/bench_pixel_latency.py --samplers ddim:10 ddim:5 mip [--compile]
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import numpy as np
import torch
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate

from robot_learn.envs.base_env import SCENE_LABELS
from robot_learn.policies import make_policy

PRESETS = {"diffusion_state": "diffusion", "diffusion_pixels": "diffusion",
           "discrete_diffusion_pixels": "discrete_diffusion",
           "discrete_diffusion_pixels_ensemble": "discrete_diffusion_ensemble"}
INSTRUCTION = "put the red cube in the blue bin"
CONFIGS = Path(__file__).resolve().parent.parent / "configs" / "policy"


def build(preset: str):
    with initialize_config_dir(config_dir=str(CONFIGS), version_base=None):  # presets may extend others
        config = instantiate(compose(config_name=preset))
    if config.frame_encoder:
        config = config.with_changes(frame_encoder={**config.frame_encoder, "label_names": list(SCENE_LABELS),
                                                    "vocab": sorted(set(INSTRUCTION.split()))})
    return make_policy(PRESETS.get(preset, "diffusion"), config, None, instructions=[INSTRUCTION]).eval()


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


ARMS = {"plain": (False, False), "fast": (True, False), "compiled": (True, True)}  # (fast_inference, compile)


def set_arm(policy, arm: str) -> None:
    """The diffusion U-Net's paths (``fast_inference``, ``compile_inference``), or for the
    discrete-diffusion presets (no ``fast`` path) ``compile_inference`` on or off."""
    fast, compiled = ARMS[arm]
    if hasattr(policy, "set_fast_inference"):
        policy.set_fast_inference(fast, compile=compiled)
    else:
        policy.set_compile_inference(compiled)


def compiled_call(policy):
    """The policy's compiled network call (its ``failed`` says whether it fell back to eager)."""
    return getattr(policy, "compiled_denoiser", None) or policy.compiled_round


def compare(runs: int, warmup: int, threads: int) -> None:
    """Each preset plain, fast (diffusion only) and compiled, the order rotating run by run."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"bench_pixel_latency --compare: torch {torch.__version__}, {threads} threads, {runs} runs after {warmup} "
          f"warmup, batch 1, {platform.processor() or platform.machine()}, {os.cpu_count()} cores (load {load:.1f})")
    print("| preset | arm | p50 / p95 (ms) | p50 / plain | CPU ms p50 | max action difference to plain |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for preset, family in PRESETS.items():
        names = list(ARMS) if family == "diffusion" else ["plain", "compiled"]
        policy = build(preset)
        obs = observation(policy)
        wall: dict[str, list[float]] = {arm: [] for arm in names}
        cpu: dict[str, list[float]] = {arm: [] for arm in names}
        chunks = {}
        with torch.no_grad():
            for arm in names:  # the compiled arm compiles here, outside the timing
                set_arm(policy, arm)
                chunks[arm] = policy.predict_action_chunk(obs, generator=torch.Generator().manual_seed(0))
            for i in range(warmup + runs):
                for arm in names[i % len(names):] + names[: i % len(names)]:
                    set_arm(policy, arm)
                    t0, c0 = time.perf_counter(), time.process_time()
                    policy.predict_action_chunk(obs)
                    if i >= warmup:
                        wall[arm].append((time.perf_counter() - t0) * 1000.0)
                        cpu[arm].append((time.process_time() - c0) * 1000.0)
        if compiled_call(policy).failed:
            print(f"| {preset} | compiled | torch.compile failed: the arm ran eagerly | | | |")
        plain = float(np.median(wall["plain"]))
        for arm in names:
            p50 = float(np.median(wall[arm]))
            difference = (chunks[arm] - chunks["plain"]).abs().max().item()
            print(f"| {preset} | {arm} | {p50:.1f} / {np.percentile(wall[arm], 95):.1f} | {p50 / plain:.2f} | "
                  f"{np.median(cpu[arm]):.1f} | {difference:.1e} |")


VLA_ARMS = {"vla": "discrete_diffusion_pixels", "ensemble": "discrete_diffusion_pixels_ensemble"}


def sampler_arms(settings: list[str], compiled: bool) -> dict[str, tuple]:
    """``{setting: (policy, observation)}``: ``diffusion_pixels`` switched to each sampler,
    ``mip`` the MIP preset, ``vla[:K]`` / ``ensemble[:K]`` the discrete-diffusion presets
    (decoding K rounds; default the preset's)."""
    arms = {}
    for setting in settings:
        base = setting.removesuffix("+bf16")
        bf16 = base != setting
        kind, _, steps = base.partition(":")
        if bf16 and (kind in VLA_ARMS or not compiled):
            raise SystemExit(f"bench_pixel_latency.py: error: arm {setting!r}: +bf16 (compile_bf16) needs --compile "
                             "and a diffusion arm")
        if kind in VLA_ARMS:
            policy = build(VLA_ARMS[kind])
            policy.set_decoding(rounds=int(steps) if steps else None)
            policy.set_compile_inference(compiled)
        else:
            policy = build("diffusion_mip_pixels" if base == "mip" else "diffusion_pixels")
            policy.set_inference_scheduler(kind, int(steps) if steps else None)
            policy.set_fast_inference(True, compile=compiled, bf16=bf16)
        arms[setting] = (policy, observation(policy))
    return arms


def samplers(settings: list[str], runs: int, warmup: int, threads: int, compiled: bool) -> None:
    """Each sampler arm timed per chunk, the order rotating run by run."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"bench_pixel_latency --samplers: torch {torch.__version__}, {threads} threads, {runs} runs after {warmup} "
          f"warmup, batch 1, compiled {compiled}, {platform.processor() or platform.machine()}, {os.cpu_count()} cores "
          f"(load {load:.1f})")
    arms = sampler_arms(settings, compiled)
    wall: dict[str, list[float]] = {name: [] for name in arms}
    names = list(arms)
    with torch.no_grad():
        for policy, obs in arms.values():  # compiles here, outside the timing
            policy.predict_action_chunk(obs)
        for i in range(warmup + runs):
            for name in names[i % len(names):] + names[: i % len(names)]:
                policy, obs = arms[name]
                t0 = time.perf_counter()
                policy.predict_action_chunk(obs)
                if i >= warmup:
                    wall[name].append((time.perf_counter() - t0) * 1000.0)
    print(f"| arm | network calls per chunk | p50 / p95 (ms) | p50 / {names[0]} |")
    print("| --- | ---: | ---: | ---: |")
    first = float(np.median(wall[names[0]]))
    for name, (policy, _) in arms.items():
        p50 = float(np.median(wall[name]))
        calls = (getattr(policy, "num_inference_steps", None)
                 or policy.decode_settings.rounds * len(getattr(policy, "members", [policy])))  # members per round
        print(f"| {name} | {calls} | {p50:.1f} / {np.percentile(wall[name], 95):.1f} | {p50 / first:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--compare", action="store_true", help="fast inference path off vs on, interleaved")
    parser.add_argument("--samplers", nargs="+", help="arms: SAMPLER:STEPS of diffusion_pixels, mip, vla[:K], ensemble[:K]; +bf16 on a diffusion arm")
    parser.add_argument("--compile", action="store_true", help="with --samplers: compile every arm")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.samplers:
        samplers(args.samplers, args.runs, args.warmup, args.threads, args.compile)
        return
    if args.compare:
        compare(args.runs, args.warmup, args.threads)
        return
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
