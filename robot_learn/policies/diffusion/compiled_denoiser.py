"""``CompiledDenoiser``: the denoiser through ``torch.compile`` for inference (config ``compile_inference``).

Most of a batch-1 chunk left after ``MatmulConv1d`` is Python calling small operators;
inductor's fused C++ kernels remove it (about 0.6x the eager fast path's time, 1 thread,
``benchmarks/bench_pixel_latency.py --compare``). The price: the first chunk compiles,
about 50 s on a 2-core machine (about 7 s when inductor's on-disk cache already holds the
graph), it needs a C++ compiler, and another batch size compiles again. Off by default.

Parameters stay inputs of the compiled graph, so in-place updates (an optimiser step, EMA,
``load_state_dict``) reach it. When compiling fails (no compiler, an unsupported platform)
the denoiser runs eagerly after one warning, and the failure is not retried.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch
from torch import nn


class CompiledDenoiser:
    """Calls ``denoiser`` through ``torch.compile``, compiled on the first call; eager after a failed compile."""

    def __init__(self, denoiser: nn.Module) -> None:
        self.denoiser = denoiser
        self.compiled: Any = None
        self.failed = False

    def __call__(self, *args: Any) -> torch.Tensor:
        if self.failed:
            return self.denoiser(*args)
        if self.compiled is None:
            self.compiled = torch.compile(self.denoiser.forward)
            try:
                return self.compiled(*args)
            except Exception as error:  # inductor's failures have many types; a bad input fails eagerly below too
                out = self.denoiser(*args)
                self.failed = True
                warnings.warn(f"compile_inference: torch.compile failed ({type(error).__name__}: "
                              f"{str(error).splitlines()[0] if str(error) else ''}); the denoiser runs eagerly",
                              RuntimeWarning, stacklevel=2)
                return out
        return self.compiled(*args)

    def __deepcopy__(self, memo: dict) -> "CompiledDenoiser":
        # A copied policy (EMA, merging) compiles its own denoiser: a compiled function is not copied.
        from copy import deepcopy

        return CompiledDenoiser(deepcopy(self.denoiser, memo))
