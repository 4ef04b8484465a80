"""A camera encoder's training step in fp32 and under bf16 autocast, with its activations
channels-last or contiguous (NCHW).

Times forward and backward of one encoder (random frames, ``--batch`` frames per camera: a
fine-tuning step of ``diffusion_pixels`` at batch 32 encodes 64 per camera) in four arms, rotating
the order run by run: ``fp32`` (the default: the uint8 frames permuted, so channels-last
strided), ``fp32 nchw``, ``bf16 channels-last`` (``set_channels_last``: weights and activations)
and ``bf16`` (the default under CPU autocast: NCHW). ``--encoder`` picks which: ``pixels`` (the
``diffusion_pixels`` frame encoder, both cameras), ``image`` (one camera of ``diffusion_image``)
or ``resnet18`` (the ResNet-18-wide encoder of ``bench_vs_lerobot.py``). Then a 32-channel
GroupNorm at 24x24 (the pixel encoder's first stage) alone, channels-last against NCHW, in fp32
and in bf16. Prints each arm's median, its ratio to ``fp32`` with a 95% interval (bootstrap over
runs) and whether this CPU runs bf16 natively.

    .venv/bin/python benchmarks/bench_encoder_layout.py --runs 30 --encoder pixels
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
from robot_learn.policies.vision_encoder import VisionEncoder, set_channels_last
from robot_learn.training.precision import cpu_runs_bf16

CONFIGS = Path(__file__).resolve().parents[1] / "configs" / "policy"
# arm: (bf16 autocast, layout forced: "nchw", "channels_last" or None for the encoder's own)
ARMS = {"fp32": (False, None), "fp32 nchw": (False, "nchw"), "bf16 channels-last": (True, "channels_last"),
        "bf16": (True, None)}
ENCODERS = {"image": dict(channels=[16, 32, 64], blocks_per_stage=1),
            "resnet18": dict(channels=[64, 128, 256, 512], blocks_per_stage=2, stem_stride=4)}


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


def encoder_step(name: str, batch: int):
    """A function of (bf16, layout) running one forward and backward of encoder ``name``, and the
    encoder module."""
    if name == "pixels":
        encoder = preset_encoder()
        frames = {c: torch.randint(0, 255, (batch, 96, 96, 3), dtype=torch.uint8) for c in encoder.config.cameras}
        words = ["put the red cube in the bin"] * batch

        def forward() -> torch.Tensor:
            return encoder.encode(frames, words)
    else:
        encoder = VisionEncoder(96, 84, num_keypoints=32, out_dim=64, **ENCODERS[name]).train()
        images = torch.randint(0, 255, (batch, 96, 96, 3), dtype=torch.uint8)

        def forward() -> torch.Tensor:
            return encoder(images)
    original = VisionEncoder.image_input

    def step(amp: bool, layout: str | None) -> float:
        if layout == "channels_last":
            set_channels_last(encoder, True)
        elif layout == "nchw":  # in fp32 the encoder keeps the permuted frames' strides; force NCHW
            VisionEncoder.image_input = lambda self, x: original(self, x).contiguous()
        try:
            t0 = time.perf_counter()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
                features = forward()
            features.float().square().mean().backward()
            return time.perf_counter() - t0
        finally:
            VisionEncoder.image_input = original
            set_channels_last(encoder, False)
    return step, encoder


def time_encoder(name: str, runs: int, batch: int) -> dict[str, list[float]]:
    step, _ = encoder_step(name, batch)
    times: dict[str, list[float]] = {arm: [] for arm in ARMS}
    for arm in ARMS.values():  # warm-up: oneDNN builds its kernels
        step(*arm), step(*arm)
    names = list(ARMS)
    for run in range(runs):
        for arm in names[run % len(names):] + names[:run % len(names)]:
            times[arm].append(step(*ARMS[arm]))
    return times


def time_group_norm(runs: int) -> dict[str, list[float]]:
    """GroupNorm(8, 32) forward and backward on [64, 32, 24, 24], per (precision, layout); the bf16
    arms take a bf16 input under autocast, as a bf16 convolution hands it on."""
    norm = torch.nn.GroupNorm(8, 32)
    x = torch.randn(64, 32, 24, 24)
    dtypes = {"fp32": torch.float32, "bf16": torch.bfloat16}
    inputs = {(dtype, layout): x.to(dtypes[dtype]).contiguous(memory_format=fmt)
              for dtype in dtypes for layout, fmt in (("channels-last", torch.channels_last),
                                                               ("nchw", torch.contiguous_format))}
    times: dict[tuple[str, str], list[float]] = {k: [] for k in inputs}
    for run in range(runs + 3):
        for (dtype, layout), value in inputs.items():
            value = value.detach().requires_grad_(True)
            t0 = time.perf_counter()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype == "bf16"):
                out = norm(value)
            out.float().square().mean().backward()
            if run >= 3:
                times[(dtype, layout)].append(time.perf_counter() - t0)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--batch", type=int, default=64, help="frames per camera in one step")
    parser.add_argument("--encoder", choices=["pixels", *ENCODERS], default="pixels")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    print(f"bench_encoder_layout: encoder {args.encoder}, torch {torch.__version__}, {args.threads} threads, "
          f"{platform.machine()}, native bf16: {cpu_runs_bf16()}, {args.runs} runs, {args.batch} frames per camera")
    times = time_encoder(args.encoder, args.runs, args.batch)
    print("| arm | forward + backward, median (ms) | over fp32 [95% CI] |\n| --- | ---: | --- |")
    for name, values in times.items():
        r, lo, hi = ratio_interval(values, times["fp32"], rng)
        print(f"| {name} | {1000 * statistics.median(values):.1f} | {r:.3f} [{lo:.3f}, {hi:.3f}] |")
    norms = time_group_norm(args.runs)
    for dtype in ("fp32", "bf16"):
        last, nchw = norms[(dtype, "channels-last")], norms[(dtype, "nchw")]
        r, lo, hi = ratio_interval(last, nchw, rng)
        print(f"GroupNorm(8, 32) on [64, 32, 24, 24], forward + backward, {dtype}: channels-last "
              f"{1000 * statistics.median(last):.2f} ms, NCHW {1000 * statistics.median(nchw):.2f} ms, "
              f"channels-last over NCHW {r:.2f}x [{lo:.2f}, {hi:.2f}]")


if __name__ == "__main__":
    main()
