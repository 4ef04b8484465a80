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
0.24x to 0.19x LeRobot's DDIM 10 (docs/benchmarks.md); on the presets' quarter-width encoders
it gained nothing. A frozen call runs eagerly while autograd is on, traces its module whole
(``fullgraph``), and compiles afresh when any weight of its module has changed since: another
tensor, storage or version counter. Two things pass unseen: an in-place write through ``.data``
(copy weights in with ``copy_`` under ``torch.no_grad()``, as ``load_state_dict`` does) and a
write to an inference tensor inside ``torch.inference_mode``. Each fresh compile costs seconds,
and inductor keeps every graph it built, with its constants, for the life of the process, so
freeze only weights that change rarely.

When compiling fails (no compiler, an unsupported platform) the call runs eagerly after one
warning, and the failure is not retried. Calls run one at a time in a process (a lock): the
freezing switch is inductor's global setting, and a graph compiled in another thread while it
is on would hold its weights as constants too.
"""

from __future__ import annotations

import threading
import types
import warnings
from collections.abc import Callable
from copy import deepcopy
from itertools import chain
from typing import Any

import torch
import torch._inductor.config as inductor_config
from torch import nn

_COMPILE_LOCK = threading.RLock()


class CompiledCall:
    """Calls ``fn`` (a module or a bound method) through ``torch.compile``, compiled on the
    first call; eagerly after a failed compile. ``what`` names it in the warning; ``frozen``
    compiles the weights in as constants (module docstring) and needs ``fn`` to be a module or
    a module's method."""

    def __init__(self, fn: Callable[..., Any], what: str, frozen: bool = False) -> None:
        if frozen and owner_module(fn) is None:
            raise ValueError(f"CompiledCall(frozen=True) for {what} needs a module or a module's method, got {fn!r}")
        self.fn = fn
        self.what = what
        self.frozen = bool(frozen)
        self.compiled: Any = None
        self.failed = False
        self.weights: tuple = ()  # frozen: the weights the compiled graph holds (weights_state)

    def __call__(self, *args: Any) -> Any:
        if self.failed or (self.frozen and torch.is_grad_enabled()):
            return self.fn(*args)
        with _COMPILE_LOCK:
            if not self.frozen:
                return self._call(args)
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
        target = self.fn.forward if isinstance(self.fn, nn.Module) else self.fn
        if self.frozen:  # a graph break would leave inner frames' frozen graphs on shared code objects
            self.compiled = torch.compile(own_code(target), dynamic=False, fullgraph=True)
        else:
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

    def __getstate__(self) -> dict:
        return {**self.__dict__, "compiled": None, "weights": ()}  # a compiled function does not pickle

    def __deepcopy__(self, memo: dict) -> "CompiledCall":
        # A copied policy (EMA, merging) compiles its own: a compiled function is not copied.
        # A bound method copies to the copied policy's method (deepcopy's memo maps the owner).
        return CompiledCall(deepcopy(self.fn, memo), self.what, self.frozen)


def owner_module(fn: Callable[..., Any]) -> nn.Module | None:
    """``fn`` itself if it is a module, a bound method's module, else None."""
    module = fn if isinstance(fn, nn.Module) else getattr(fn, "__self__", None)
    return module if isinstance(module, nn.Module) else None


def weights_state(fn: Callable[..., Any]) -> tuple:
    """Identity, storage and version of every parameter and buffer of ``fn``'s module
    (``owner_module``): it changes whenever a weight is replaced or written in place."""
    module = owner_module(fn)
    if module is None:
        return ()
    return tuple((id(t), t.data_ptr(), t._version) for t in chain(module.parameters(), module.buffers()))


def own_code(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A function calling ``fn`` with a code object of its own. dynamo keeps graphs per code
    object, and a frozen graph's guards do not see weights written in place; a new code object
    starts with no graphs of its own."""
    call = lambda *args: fn(*args)  # noqa: E731
    return types.FunctionType(call.__code__.replace(), call.__globals__, "frozen_call", None, call.__closure__)
