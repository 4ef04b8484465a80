"""The pixel presets' frame encoder: one training step in fp32 and under bf16 autocast, with its
activations channels-last (as the uint8 frames arrive, permuted) or contiguous (NCHW).

Times forward and backward of ``diffusion_pixels``' frame encoder (both cameras, random frames,
``--batch`` frames per camera: a fine-tuning step at batch 32 encodes 64) in four arms, rotating
the order run by run: ``fp32`` (the default), ``fp32-nchw``, ``bf16`` (channels-last) and
``bf16-nchw`` (what ``frame_pretraining.cpu_bf16`` runs). Then a 32-channel GroupNorm at 24x24
(the encoder's first stage) alone, channels-last against NCHW. Prints each arm's median, its ratio
to ``fp32`` with a 95% interval (bootstrap over runs) and, for bf16, whether this CPU runs bf16
natively.

    .venv/bin/python benchmarks/bench_encoder_layout.py --runs 30
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from pathlib import Path

import numpy as np
import torch
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate

from robot_learn.policies.frame_encoder import FrameEncoder, FrameEncoderConfig
from robot_learn.policies.vision_encoder import VisionEncoder
from robot_learn.training.precision import cpu_runs_bf16

CONFIGS = Path(__file__).resolve().parents[1] / "configs" / "policy"
ARMS = {"fp32": (False, False), "fp32-nchw": (False, True), "bf16": (True, False), "bf16-nchw": (True, True)}


def preset_encoder() -> FrameEncoder:
    with initialize_config_dir(config_dir=str(CONFIGS), version_base=None):
        policy = instantiate(compose(config_name="diffusion_pixels"))
    settings = dict(policy.frame_encoder, vocab=["put", "the", "red", "cube", "in", "bin"])
    return FrameEncoder(FrameEncoderConfig(**settings)).train()


def ratio_interval(arm: list[float], base: list[float], rng: np.random.Generator) -> tuple[float, float, float]:
    """Median of ``arm`` over median of ``base``, with a 95% bootstrap interval over runs."""
    a, b = np.asarray(arm), np.asarray(base)
    boots = [np.median(rng.choice(a, len(a))) / np.median(rng.choice(b, len(b))) for _ in range(2000)]
    return float(np.median(a) / np.median(b)), float(np.percentile(boots, 2.5)), float(np.percentile(boots, 97.5))


def time_encoder(runs: int, batch: int) -> dict[str, list[float]]:
    encoder = preset_encoder()
    frames = {c: torch.randint(0, 255, (batch, 96, 96, 3), dtype=torch.uint8) for c in encoder.config.cameras}
    words = ["put the red cube in the bin"] * batch
    original = VisionEncoder.image_input
    times: dict[str, list[float]] = {arm: [] for arm in ARMS}

    def step(amp: bool, nchw: bool) -> float:
        # The arm's layout is forced here: under autocast the encoder itself picks NCHW.
        VisionEncoder.image_input = ((lambda self, x: original(self, x).contiguous()) if nchw else
                                     (lambda self, x: original(self, x).contiguous(memory_format=torch.channels_last)))
        try:
            t0 = time.perf_counter()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
                features = encoder.encode(frames, words)
            features.float().square().mean().backward()
            return time.perf_counter() - t0
        finally:
            VisionEncoder.image_input = original

    for arm in ARMS.values():  # warm-up: oneDNN builds its kernels
        step(*arm), step(*arm)
    names = list(ARMS)
    for run in range(runs):
        for name in names[run % len(names):] + names[:run % len(names)]:
            times[name].append(step(*ARMS[name]))
    return times


def time_group_norm(runs: int) -> dict[str, list[float]]:
    norm = torch.nn.GroupNorm(8, 32)
    x = torch.randn(64, 32, 24, 24)
    inputs = {"channels-last": x.contiguous(memory_format=torch.channels_last), "nchw": x.contiguous()}
    times: dict[str, list[float]] = {k: [] for k in inputs}
    for run in range(runs + 3):
        for name, value in inputs.items():
            value = value.detach().requires_grad_(True)
            t0 = time.perf_counter()
            norm(value).square().mean().backward()
            if run >= 3:
                times[name].append(time.perf_counter() - t0)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--batch", type=int, default=64, help="frames per camera in one step")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    print(f"bench_encoder_layout: torch {torch.__version__}, {args.threads} threads, {platform.machine()}, "
          f"native bf16: {cpu_runs_bf16()}, {args.runs} runs, {args.batch} frames per camera")
    times = time_encoder(args.runs, args.batch)
    print("| arm | forward + backward, median (ms) | over fp32 [95% CI] |\n| --- | ---: | --- |")
    for name, values in times.items():
        r, lo, hi = ratio_interval(values, times["fp32"], rng)
        print(f"| {name} | {1000 * statistics.median(values):.1f} | {r:.3f} [{lo:.3f}, {hi:.3f}] |")
    norms = time_group_norm(args.runs)
    r, lo, hi = ratio_interval(norms["channels-last"], norms["nchw"], rng)
    print(f"GroupNorm(8, 32) on [64, 32, 24, 24], forward + backward, fp32: channels-last "
          f"{1000 * statistics.median(norms['channels-last']):.2f} ms, NCHW {1000 * statistics.median(norms['nchw']):.2f} ms,"
          f" channels-last over NCHW {r:.2f}x [{lo:.2f}, {hi:.2f}]")


if __name__ == "__main__":
    main()
