"""Where each millisecond of an action chunk goes, at batch 1.

For each preset (built as ``bench_pixel_latency.py`` builds it: random weights, raw
frames in), the policy's parts are timed as regions of ``predict_action_chunk``:

- diffusion: frame encoder, observation encoder, denoiser (every step), scheduler
  (``sampler.step``, every step); the rest is noise, clamping and Python glue;
- discrete diffusion: frame encoder, observation tokens, prefix encoding (the cached
  keys and values), denoiser rounds (the backbone over the action tokens), output head;
  the rest is the decoding bookkeeping (sampling, confidences, re-masking) and glue.

Two passes per preset. Wall timers around each region, with no profiler attached,
give the milliseconds per chunk. Then ``torch.profiler`` records the same chunks with
each region annotated: inside a region, "torch ops" is the time of the operators it
called directly, "Python" the region's time outside them (module calls, argument
parsing, the interpreter), and the three operators with the most self time are named.
The profiler slows small operators, so read its columns as shares, not as latency.

    .venv/bin/python benchmarks/profile_chunk.py [--runs 30] [--threads 1] [--plain] [--presets P ...]

``--plain`` turns the diffusion U-Net's fast inference path off (config ``fast_inference``).
``--presets`` picks presets; besides the defaults, ``diffusion_mip_state`` and
``diffusion_mip_pixels`` (the MIP head: two denoiser passes, no scheduler step).
"""

from __future__ import annotations

import argparse
import platform
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch
from torch.profiler import ProfilerActivity, profile, record_function

from bench_pixel_latency import PRESETS, build, observation

MIP_PRESETS = ("diffusion_mip_state", "diffusion_mip_pixels")
OTHER = "other (glue, noise, decoding bookkeeping)"


def regions(policy) -> dict[str, tuple[Any, str]]:
    """Region name -> (object, method name) to time, in the order a chunk runs them."""
    found: dict[str, tuple[Any, str]] = {}
    if policy.frame_encoder is not None:
        found["frame encoder"] = (policy.frame_encoder, "forward")
    if policy.name == "diffusion":
        found["observation encoder"] = (policy.obs_encoder, "forward")
        found["denoiser (all steps)"] = (policy.denoiser, "forward")
        if policy.config.head != "mip":  # MIP's two passes have no scheduler
            found["scheduler step"] = (policy.sampler, "step")
    else:
        found["observation tokens"] = (policy.observation_tokens, "forward")
        found["prefix encoding"] = (policy.backbone, "encode_prefix")
        found["denoiser rounds (backbone)"] = (policy.backbone, "forward_actions")
        found["output head"] = (policy.head, "forward")
    return found


@contextmanager
def timed_regions(policy, wall: dict[str, float]) -> Iterator[None]:
    """Wrap each region's method (an instance attribute shadowing the class's) so that it
    adds its wall time to ``wall`` and shows in the profiler as ``record_function(name)``."""
    patched = []
    for name, (owner, method) in regions(policy).items():
        original = getattr(owner, method)

        def wrapper(*args, _original: Callable = original, _name: str = name, **kwargs):
            with record_function(_name):
                start = time.perf_counter()
                out = _original(*args, **kwargs)
                wall[_name] += time.perf_counter() - start
            return out

        setattr(owner, method, wrapper)
        patched.append((owner, method))
    try:
        yield
    finally:
        for owner, method in patched:
            delattr(owner, method)


def profiler_split(prof, names: list[str]) -> dict[str, dict[str, Any]]:
    """Per region: total time, time of the operators it called directly, and its top operators by self time."""
    split: dict[str, dict[str, Any]] = {n: {"total": 0.0, "ops": 0.0, "self": defaultdict(float)} for n in names}
    for event in prof.events():
        if event.name in split:
            split[event.name]["total"] += event.cpu_time_total
            continue
        region, parent, direct = None, event.cpu_parent, True
        while parent is not None:
            if parent.name in split:
                region = parent.name
                break
            direct = direct and not parent.name.startswith("aten::")
            parent = parent.cpu_parent
        if region is None or not event.name.startswith("aten::"):
            continue
        split[region]["self"][event.name] += event.self_cpu_time_total
        if direct:  # an operator called from Python, not from inside another operator
            split[region]["ops"] += event.cpu_time_total
    return split


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--plain", action="store_true", help="diffusion presets without the fast inference path")
    parser.add_argument("--presets", nargs="*", default=list(PRESETS), choices=[*PRESETS, *MIP_PRESETS])
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"profile_chunk: torch {torch.__version__}, {args.threads} threads, {args.runs} chunks, batch 1, "
          f"fast_inference {'off' if args.plain else 'as configured'}, {platform.processor() or platform.machine()}")
    for preset in args.presets:
        torch.manual_seed(0)
        policy = build(preset)
        if args.plain and hasattr(policy, "set_fast_inference"):
            policy.set_fast_inference(False)
        obs = observation(policy)
        names = list(regions(policy))
        wall: dict[str, float] = defaultdict(float)
        chunk_times = []
        with torch.no_grad(), timed_regions(policy, wall):
            for _ in range(args.warmup):
                policy.predict_action_chunk(obs)
            wall.clear()
            for _ in range(args.runs):
                start = time.perf_counter()
                policy.predict_action_chunk(obs)
                chunk_times.append(time.perf_counter() - start)
            region_ms = {n: 1000.0 * wall[n] / args.runs for n in names}  # before the profiled pass adds to it
            with profile(activities=[ProfilerActivity.CPU]) as prof:
                for _ in range(args.runs):
                    policy.predict_action_chunk(obs)
        split = profiler_split(prof, names)
        chunk_ms = 1000.0 * float(np.mean(chunk_times))
        other_ms = chunk_ms - sum(region_ms.values())
        fast = getattr(policy.config, "fast_inference", None)
        print(f"\n[{preset}] {chunk_ms:.1f} ms per chunk (mean; p50 {1000.0 * np.median(chunk_times):.1f})"
              + ("" if fast is None else f", fast_inference={fast}"))
        print("| region | ms per chunk | share | profiler: torch ops / Python | top operators (self time share) |")
        print("| --- | ---: | ---: | ---: | --- |")
        for name in names:
            ms = region_ms[name]
            region = split[name]
            total = max(region["total"], 1e-9)
            ops = min(region["ops"] / total, 1.0)
            top = sorted(region["self"].items(), key=lambda item: -item[1])[:3]
            top_text = ", ".join(f"{op.removeprefix('aten::')} {100.0 * t / total:.0f}%" for op, t in top)
            print(f"| {name} | {ms:.2f} | {100.0 * ms / chunk_ms:.0f}% | {100.0 * ops:.0f}% / {100.0 * (1 - ops):.0f}% "
                  f"| {top_text} |")
        print(f"| {OTHER} | {other_ms:.2f} | {100.0 * other_ms / chunk_ms:.0f}% | | |")


if __name__ == "__main__":
    main()
