"""Which precision a training step runs in: bf16 autocast on CUDA (``train.amp``) and on CPUs
that run bf16 natively (``train.cpu_amp``), fp32 elsewhere.

bf16 needs no loss scaling. The weights, gradients and optimizer state stay fp32; autocast
runs convolutions and matrix products in bf16. On a CPU with AVX512-BF16 (2 cores) it made
a training step of the ResNet-18-wide image configuration 1.4x faster (1.47x since the
encoders run NCHW under autocast) and the state U-Net's 1.0-1.2x
(``benchmarks/bench_vs_lerobot.py``). It did not speed up the pixel preset's cached phase,
and it slowed the VLA's step (0.945x, before its patch stem ran NCHW under autocast), so
``cpu_amp`` is off by default. The pixel presets' frame encoder has its own switch,
``frame_pretraining.cpu_bf16``, off too (it cost stack 12 points): with its activations NCHW
under autocast (as every camera encoder runs there) its step takes 0.66x of fp32's, against
1.17x channels-last
(``benchmarks/bench_encoder_layout.py``; docs/benchmarks.md).
On a CPU without native bf16 it falls back to fp32 with a warning (for ``cpu_bf16``: one in
pretraining, one in fine-tuning).
"""

from __future__ import annotations

import contextlib
import warnings

import torch

from robot_learn.policies.compiled_call import cpu_runs_bf16


def runs_bf16(amp: bool, cpu_amp: bool, device: torch.device) -> bool:
    """Whether a training step on ``device`` runs under bf16 autocast with these settings."""
    if device.type == "cuda":
        return amp
    return device.type == "cpu" and cpu_amp and cpu_runs_bf16()


def autocast_dtype(amp: bool, cpu_amp: bool, device: torch.device, setting: str = "train.cpu_amp") -> torch.dtype | None:
    """The autocast dtype of a training step on ``device`` (None: fp32); ``setting`` names
    ``cpu_amp`` in the warning on a CPU without native bf16."""
    if runs_bf16(amp, cpu_amp, device):
        return torch.bfloat16
    if device.type == "cpu" and cpu_amp:
        warnings.warn(f"{setting}=true: this CPU has no native bf16 (AVX512-BF16 or AMX), so bf16 autocast "
                      "would not speed training up; training in fp32", stacklevel=2)
    return None


def autocast(device: torch.device, dtype: torch.dtype | None) -> contextlib.AbstractContextManager:
    """``torch.autocast`` for ``dtype`` on ``device``, or nothing for fp32."""
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=dtype)
