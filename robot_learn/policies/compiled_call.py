"""``CompiledCall``: a network call through ``torch.compile`` for inference (``compile_inference``).

At batch 1 on a CPU most of a small network's time is Python calling small operators;
inductor's fused C++ kernels remove much of it. The diffusion policy compiles its denoiser
(about 0.6x the eager fast path's time, 1 thread, ``benchmarks/bench_pixel_latency.py
--compare``), the discrete-diffusion VLA its decoding round, and a pixel policy its frozen
frame encoder's image trunks. The price: the first call compiles (tens of seconds on a
2-core machine, a few when inductor's on-disk cache already holds the graph), it needs a
C++ compiler, and another batch size compiles again. Off by default.

Parameters stay inputs of the compiled graph, so in-place updates (an optimiser step, EMA,
``load_state_dict``) reach it. When compiling fails (no compiler, an unsupported platform)
the call runs eagerly after one warning, and the failure is not retried.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from copy import deepcopy
from typing import Any

import torch
from torch import nn


class CompiledCall:
    """Calls ``fn`` (a module or a bound method) through ``torch.compile``, compiled on the
    first call; eagerly after a failed compile. ``what`` names it in the warning."""

    def __init__(self, fn: Callable[..., Any], what: str) -> None:
        self.fn = fn
        self.what = what
        self.compiled: Any = None
        self.failed = False

    def __call__(self, *args: Any) -> Any:
        if self.failed:
            return self.fn(*args)
        if self.compiled is None:
            # Static shapes: a batch-size-generic graph (what dynamo makes after a second shape)
            # ran batch 1 slower than a graph for batch 1; each new shape compiles its own instead.
            self.compiled = torch.compile(self.fn.forward if isinstance(self.fn, nn.Module) else self.fn, dynamic=False)
            try:
                return self.compiled(*args)
            except Exception as error:  # inductor's failures have many types; a bad input fails eagerly below too
                out = self.fn(*args)
                self.failed = True
                warnings.warn(f"compile_inference: torch.compile failed ({type(error).__name__}: "
                              f"{str(error).splitlines()[0] if str(error) else ''}); {self.what} runs eagerly",
                              RuntimeWarning, stacklevel=2)
                return out
        return self.compiled(*args)

    def __deepcopy__(self, memo: dict) -> "CompiledCall":
        # A copied policy (EMA, merging) compiles its own: a compiled function is not copied.
        # A bound method copies to the copied policy's method (deepcopy's memo maps the owner).
        return CompiledCall(deepcopy(self.fn, memo), self.what)
