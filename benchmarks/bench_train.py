"""Training throughput of the Trainer, and the share of each step spent getting data.

Runs the real ``Trainer`` (AdamW, EMA, grad clipping; fp32 on CPU) on a synthetic
``EpisodeStore`` for the ``diffusion_state`` and ``diffusion_image`` presets (the
image preset: cameras ``front`` + ``wrist`` at 96x96 and the instruction), logging
every step. Reports the median step time, samples/s, and the median time in the
data pipeline (``sampler.sample`` + ``to_torch``) as a fraction of the whole step.
Goal: data pipeline < 5% of the step.

``--compare-optimizer`` instead times whole training steps (data, forward, backward,
AdamW, EMA) of each preset with each AdamW implementation (``train.optimizer_impl``:
fused, foreach, for_loop), one Trainer per implementation from the same weights, the
order rotating step by step so that load hits all alike; it prints each one's median
step and its ratio to ``for_loop`` (PyTorch's default on CPU).

    .venv/bin/python benchmarks/bench_train.py [--batch-size 64] [--steps 8] [--warmup 2] [--threads 2]
                                               [--no-cache | --cache-fraction F] [--prefetch N]
    .venv/bin/python benchmarks/bench_train.py --compare-optimizer --steps 30
    .venv/bin/python benchmarks/bench_train.py --compare-kernel --steps 60

``--compare-kernel`` times the ``diffusion_state`` U-Net (the one ``diffusion_pixels`` trains on
cached features) with ``kernel_size`` 5 and 3 the same way.
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from robot_learn.data import EpisodeStore, WindowSampler
from robot_learn.data.sampler import DEFAULT_MAX_CACHE_BYTES
from robot_learn.policies import diffusion_image_config, diffusion_state_config
from robot_learn.training import Trainer, TrainConfig, build_policy_for_view

INSTRUCTIONS = ["put the red cube on the blue cube", "take the green cube out of the bin", "insert the peg into the hole"]


def build_store(path: Path, episodes: int, length: int, cameras: tuple[str, ...]) -> EpisodeStore:
    store = EpisodeStore.create(path)
    rng = np.random.default_rng(0)
    for i in range(episodes):
        steps = {
            "state": rng.normal(size=(length, 10)).astype(np.float32),
            "env_state": rng.normal(size=(length, 14)).astype(np.float32),
            "action": rng.normal(size=(length, 5)).astype(np.float32),
        }
        for cam in cameras:
            steps[f"images/{cam}"] = rng.integers(0, 256, size=(length, 96, 96, 3), dtype=np.uint8)
        store.append_episode(steps, {"task": "stack", "instruction": INSTRUCTIONS[i % 3], "success": True,
                                     "seed": i, "source": "demo"})
    return store


def cache_cap(store: EpisodeStore, keys: tuple[str, ...], fraction: float | None) -> int:
    """``fraction`` of the bytes the sampler's arrays take in memory (the default cap when None)."""
    if fraction is None:
        return DEFAULT_MAX_CACHE_BYTES
    frame = sum(int(np.prod(store.schema[k]["shape"])) * np.dtype(store.schema[k]["dtype"]).itemsize
                for k in (*keys, "action"))
    return int(fraction * frame * store.num_frames)


def run(name: str, config, obs_keys: tuple[str, ...], store: EpisodeStore, args, out_dir: Path) -> dict:
    torch.manual_seed(0)
    policy = build_policy_for_view(config, store.view())
    sampler = WindowSampler(store, obs_keys=obs_keys, obs_horizon=config.obs_horizon,
                            action_horizon=config.action_horizon, batch_size=args.batch_size, seed=0,
                            cache=not args.no_cache, max_cache_bytes=cache_cap(store, obs_keys, args.cache_fraction))
    total = args.warmup + args.steps
    cfg = TrainConfig(steps=total, batch_size=args.batch_size, warmup_steps=10, log_every=1, ckpt_every=0,
                      out_dir=str(out_dir / name), device="cpu", num_threads=args.threads, progress_bar=False,
                      prefetch=args.prefetch)
    Trainer(policy, sampler, cfg).fit()
    with open(out_dir / name / "metrics.csv") as f:
        rows = [r for r in csv.DictReader(f)][args.warmup:]
    step = [float(r["step_time"]) for r in rows]
    data = [float(r["data_time"]) for r in rows]
    n_params = sum(p.numel() for p in policy.parameters())
    return {
        "name": name,
        "params_m": n_params / 1e6,
        "step_ms": 1000 * statistics.median(step),
        "data_ms": 1000 * statistics.median(data),
        "samples_per_s": args.batch_size / statistics.median(step),
        "data_frac": statistics.median(d / s for d, s in zip(data, step)),
    }


def paired_ratio_text(a: list[float], b: list[float], rng: np.random.Generator) -> str:
    """Median of the per-rep ratios a/b with its 95% bootstrap interval, as "0.990 [0.950, 1.030]"."""
    ratios = np.asarray(a) / np.asarray(b)
    boot = [np.median(rng.choice(ratios, len(ratios))) for _ in range(2000)]
    low, high = np.percentile(boot, [2.5, 97.5])
    return f"{np.median(ratios):.3f} [{low:.3f}, {high:.3f}]"


def compare_steps(name: str, arms: dict[str, tuple[object, dict]], base: str, obs_keys: tuple[str, ...],
                  store: EpisodeStore, args, out_dir: Path) -> None:
    """Median whole-step time per arm (a policy config and TrainConfig settings), one Trainer per
    arm from the same seed, the order rotating step by step; each arm's paired ratio to ``base``."""
    trainers = {}
    for label, (config, settings) in arms.items():
        torch.manual_seed(0)
        policy = build_policy_for_view(config, store.view())
        sampler = WindowSampler(store, obs_keys=obs_keys, obs_horizon=config.obs_horizon,
                                action_horizon=config.action_horizon, batch_size=args.batch_size, seed=0)
        cfg = TrainConfig(steps=args.warmup + args.steps, batch_size=args.batch_size, warmup_steps=10,
                          out_dir=str(out_dir / f"{name}_{label}"), device="cpu", num_threads=args.threads,
                          progress_bar=False, **settings)
        trainers[label] = Trainer(policy, sampler, cfg)
    labels = list(arms)
    times: dict[str, list[float]] = {label: [] for label in labels}
    for i in range(args.warmup + args.steps):
        k = i % len(labels)
        for label in labels[k:] + labels[:k]:
            t0 = time.perf_counter()
            trainers[label]._train_step()
            if i >= args.warmup:
                times[label].append(time.perf_counter() - t0)
    rng = np.random.default_rng(0)
    for label in labels:
        p50 = statistics.median(times[label])
        params = sum(p.numel() for p in trainers[label].policy.parameters()) / 1e6
        # Paired: each rotation's step against the base arm's step in the same rotation.
        print(f"| {name} | {label} | {params:.2f} M | {1000 * p50:.1f} | {p50 / statistics.median(times[base]):.3f} | "
              f"{paired_ratio_text(times[label], times[base], rng)} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--steps", type=int, default=8, help="measured steps per config")
    parser.add_argument("--warmup", type=int, default=2, help="unmeasured steps first")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--no-cache", action="store_true", help="read every batch from zarr (out of core)")
    parser.add_argument("--cache-fraction", type=float, default=None,
                        help="cap the sampler's cache at this fraction of its arrays (out of core, block_pool)")
    parser.add_argument("--prefetch", type=int, default=0, help="train.prefetch: batches drawn ahead on a thread")
    parser.add_argument("--compare-optimizer", action="store_true",
                        help="whole-step time per AdamW implementation, interleaved")
    parser.add_argument("--compare-kernel", action="store_true",
                        help="whole-step time of the state U-Net with kernel 5 and 3, interleaved")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.compare_optimizer or args.compare_kernel:
        what = "AdamW implementation" if args.compare_optimizer else "U-Net kernel"
        print(f"bench_train: whole training steps per {what}: torch {torch.__version__}, {args.threads} threads, "
              f"batch {args.batch_size}, {args.warmup} warmup + {args.steps} measured steps per arm, "
              f"load {os.getloadavg()[0]:.1f}")
        print(f"| preset | {'optimizer_impl' if args.compare_optimizer else 'kernel_size'} | parameters | "
              "step p50 (ms) | p50 / base p50 | paired ratio to the base, median [95% CI] |")
        print("| --- | --- | ---: | ---: | ---: | ---: |")
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            state = build_store(tmp / "state.zarr", episodes=20, length=100, cameras=())
            if args.compare_kernel:  # the U-Net of make demo's cached phase, on state-sized inputs
                arms = {str(k): (diffusion_state_config(kernel_size=k), {}) for k in (5, 3)}
                compare_steps("diffusion_state", arms, "5", ("state", "env_state"), state, args, tmp)
                return
            from robot_learn.training.config import OPTIMIZER_IMPLS

            for name, config, keys, store in (
                    ("diffusion_state", diffusion_state_config(), ("state", "env_state"), state),
                    ("diffusion_image", diffusion_image_config(), ("state", "images/front", "images/wrist"),
                     build_store(tmp / "image.zarr", episodes=10, length=60, cameras=("front", "wrist")))):
                arms = {impl: (config, {"optimizer_impl": impl}) for impl in OPTIMIZER_IMPLS}
                compare_steps(name, arms, "for_loop", keys, store, args, tmp)
        return

    print("bench_train: Trainer throughput and data-pipeline share of the step")
    print(f"  torch {torch.__version__} | CPU, {args.threads} threads | {platform.processor() or platform.machine()}")
    print(f"  batch {args.batch_size} | {args.warmup} warmup + {args.steps} measured steps | fp32, AdamW, EMA, clip 1.0"
          f" | sampler cache {'off (zarr reads)' if args.no_cache else 'on'}"
          f"{f' capped at {args.cache_fraction:g} of the arrays' if args.cache_fraction else ''}"
          f" | prefetch {args.prefetch}")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        state_store = build_store(tmp / "state.zarr", episodes=20, length=100, cameras=())
        image_store = build_store(tmp / "image.zarr", episodes=10, length=60, cameras=("front", "wrist"))
        state_cfg = diffusion_state_config()
        image_cfg = diffusion_image_config()
        print(f"  diffusion_state: state(10)+env_state(14), To={state_cfg.obs_horizon}, Ta={state_cfg.action_horizon}, "
              f"U-Net down_dims={state_cfg.down_dims}; store 20 eps x 100 steps")
        print(f"  diffusion_image: state(10) + front/wrist 96x96 (crop {image_cfg.crop_size}) + instruction, "
              f"vision channels={image_cfg.vision_channels}; store 10 eps x 60 steps")
        results.append(run("diffusion_state", state_cfg, ("state", "env_state"), state_store, args, tmp))
        results.append(run("diffusion_image", image_cfg, ("state", "images/front", "images/wrist"), image_store, args, tmp))

    print()
    print(f"{'config':<17}{'params':>9}{'step p50':>11}{'data p50':>11}{'samples/s':>11}{'data/step':>11}")
    for r in results:
        print(f"{r['name']:<17}{r['params_m']:>8.2f}M{r['step_ms']:>9.1f}ms{r['data_ms']:>9.2f}ms"
              f"{r['samples_per_s']:>11.1f}{100 * r['data_frac']:>10.2f}%")
    ratio = results[0]["samples_per_s"] / results[1]["samples_per_s"]
    print(f"\nstate/image throughput ratio: {ratio:.1f}x")
    worst = max(r["data_frac"] for r in results)
    print(f"data pipeline share (worst config): {100 * worst:.2f}% -> goal < 5%: {'met' if worst < 0.05 else 'NOT met'}")


if __name__ == "__main__":
    main()
