"""``CompiledCall``: a network call through ``torch.compile`` for inference (``compile_inference``).

At batch 1 on a CPU most of a small network's time is Python calling small operators;
inductor's fused C++ kernels remove much of it. The diffusion policy compiles its denoiser
(about 0.6x the eager fast path's time, 1 thread, ``benchmarks/bench_pixel_latency.py
--compare``) and its image encoders, the discrete-diffusion VLA its decoding round, and a
pixel policy its frozen frame encoder. The price: the first call compiles (tens of seconds on
a 2-core machine, a few when inductor's on-disk cache already holds the graph), it needs a C++
compiler, and another batch size compiles again. Off by default.

Parameters stay inputs of the compiled graph, so in-place updates (an optimiser step, EMA,
``load_state_dict``) reach it. ``frozen=True`` instead folds the weights into the graph as
constants (inductor's ``freezing``: convolution weights prepacked for oneDNN once, not
reordered on every call). On the ResNet-18-wide image configuration of
``benchmarks/bench_vs_lerobot.py`` the encoder compiled so took the compiled MIP-2 chunk from
0.24x to 0.19x LeRobot's DDIM 10 (docs/benchmarks.md). A frozen call runs eagerly while autograd is on, and it
compiles afresh when any weight of its module has changed since: another tensor, storage or
version counter. Writes through ``.data`` bypass the version counter; copy weights in with
``copy_`` under ``torch.no_grad()`` (as ``load_state_dict`` does).

When compiling fails (no compiler, an unsupported platform) the call runs eagerly after one
warning, and the failure is not retried.
"""

from __future__ import annotations

import types
import warnings
from collections.abc import Callable
from copy import deepcopy
from itertools import chain
from typing import Any

import torch
import torch._inductor.config as inductor_config
from torch import nn


class CompiledCall:
    """Calls ``fn`` (a module or a bound method) through ``torch.compile``, compiled on the
    first call; eagerly after a failed compile. ``what`` names it in the warning; ``frozen``
    compiles the weights in as constants (module docstring)."""

    def __init__(self, fn: Callable[..., Any], what: str, frozen: bool = False) -> None:
        self.fn = fn
        self.what = what
        self.frozen = bool(frozen)
        self.compiled: Any = None
        self.failed = False
        self.weights: tuple = ()  # frozen: the weights the compiled graph holds (weights_state)

    def __call__(self, *args: Any) -> Any:
        if self.failed:
            return self.fn(*args)
        if not self.frozen:
            return self._call(args)
        if torch.is_grad_enabled():
            return self.fn(*args)
        weights = weights_state(self.fn)
        if weights != self.weights:
            self.compiled, self.weights = None, weights
        with inductor_config.patch(freezing=True):  # also for a recompile (another batch size)
            return self._call(args)

    def _call(self, args: tuple) -> Any:
        if self.compiled is not None:
            return self.compiled(*args)
        # Static shapes: a batch-size-generic graph (what dynamo makes after a second shape)
        # ran batch 1 slower than a graph for batch 1; each new shape compiles its own instead.
        target = own_code(self.fn) if self.frozen else (self.fn.forward if isinstance(self.fn, nn.Module) else self.fn)
        self.compiled = torch.compile(target, dynamic=False)
        try:
            return self.compiled(*args)
        except Exception as error:  # inductor's failures have many types; a bad input fails eagerly below too
            out = self.fn(*args)
            self.failed = True
            warnings.warn(f"compile_inference: torch.compile failed ({type(error).__name__}: "
                          f"{str(error).splitlines()[0] if str(error) else ''}); {self.what} runs eagerly",
                          RuntimeWarning, stacklevel=3)
            return out

    def __deepcopy__(self, memo: dict) -> "CompiledCall":
        # A copied policy (EMA, merging) compiles its own: a compiled function is not copied.
        # A bound method copies to the copied policy's method (deepcopy's memo maps the owner).
        return CompiledCall(deepcopy(self.fn, memo), self.what, self.frozen)


def weights_state(fn: Callable[..., Any]) -> tuple:
    """Identity, storage and version of every parameter and buffer of ``fn``'s module (``fn``
    itself or a bound method's owner): it changes whenever a weight is replaced or written in place."""
    module = fn if isinstance(fn, nn.Module) else getattr(fn, "__self__", None)
    if not isinstance(module, nn.Module):
        return ()
    return tuple((id(t), t.data_ptr(), t._version) for t in chain(module.parameters(), module.buffers()))


def own_code(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A function calling ``fn`` with a code object of its own. dynamo keeps graphs per code
    object, and a frozen graph's guards do not see weights written in place; a new code object
    starts with no graphs, and the old ones are freed with it."""
    call = lambda *args: fn(*args)  # noqa: E731
    return types.FunctionType(call.__code__.replace(), call.__globals__, "frozen_call", None, call.__closure__)
