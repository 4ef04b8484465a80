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

Every call traces its function whole (``fullgraph``) through a code object of its own, and
skips dynamo's guards on the module (``skip_guard_on_all_nn_modules_unsafe``): checking them
took about 0.3 ms a call at batch 1. What of theirs this code changes at run time is checked
here instead: an unfrozen graph reads the parameters on every call, so an update or a replaced
tensor reaches it; a change of the module's mode (``train``/``eval``), of its dtype or device,
or of a layout switch (``SWITCHES``: channels-last encoders, the U-Net's matmul path) compiles
afresh (``module_state``); a graph that raises is compiled afresh once; and a code object of
one's own means no other instance's graph is ever reused. Any other plain attribute a traced
module reads must stay fixed after the first call (none of ours changes), and so must the mode
of a submodule set apart from its owner's. Inductor's C++ wrapper
(``cpp_wrapper``) calls the kernels from C++ rather than Python. Together, ad hoc and
interleaved at batch 1 on 2 threads, the compiled MIP-2 chunk took 0.84x (state) and 0.89x
(ResNet-18-wide image) of its time before, for a first call of 10-25 s instead of 5-10 s.

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
from torch.utils._pytree import tree_map

_COMPILE_LOCK = threading.RLock()
# Plain attributes that change what a module computes (``VisionEncoder.channels_last`` by
# set_channels_last, ``MatmulConv1d.matmul_inference`` by set_matmul_inference). dynamo's guards
# on modules are skipped, so a call reads these itself (``module_state``).
SWITCHES = ("channels_last", "matmul_inference")


class CompiledCall:
    """Calls ``fn`` (a module or a bound method) through ``torch.compile``, compiled on the
    first call; eagerly after a failed compile. ``what`` names it in the warning; ``frozen``
    compiles the weights in as constants (module docstring) and needs ``fn`` to be a module or
    a module's method; ``set_bf16`` runs it in bf16, frozen."""

    def __init__(self, fn: Callable[..., Any], what: str, frozen: bool = False) -> None:
        if frozen and owner_module(fn) is None:
            raise ValueError(f"CompiledCall(frozen=True) for {what} needs a module or a module's method, got {fn!r}")
        self.fn = fn
        self.what = what
        self.always_frozen = bool(frozen)
        self.bf16 = False  # set_bf16
        self.compiled: Any = None
        self.failed = False
        self.weights: tuple = ()  # what the compiled graph was built for (module_state; frozen: weights_state too)
        self.switches: list[tuple[nn.Module, str]] | None = None  # (submodule, SWITCHES name), found once

    def __call__(self, *args: Any) -> Any:
        if self.failed or (self.frozen and torch.is_grad_enabled()):
            return self.fn(*args)
        with _COMPILE_LOCK:
            if self.switches is None:
                self.switches = switches_of(self.fn)
            state = module_state(self.fn, self.switches) + (weights_state(self.fn) if self.frozen else ())
            if state != self.weights:  # dynamo's own guards on the module are skipped (_call)
                self.compiled, self.weights = None, state
            with inductor_config.patch(freezing=self.frozen, cpp_wrapper=True):  # also for a recompile
                return self._call(args)

    @property
    def frozen(self) -> bool:
        """Whether the weights are compiled in as constants (asked for, or bf16)."""
        return self.always_frozen or self.bf16

    def set_bf16(self, enabled: bool) -> None:
        """Run the call in bf16 (``bf16_call``) with its weights frozen in, or back in fp32;
        the next call compiles afresh. Needs a module or a module's method."""
        enabled = bool(enabled)
        if enabled and owner_module(self.fn) is None:
            raise ValueError(f"CompiledCall.set_bf16 for {self.what} needs a module or a module's method, got {self.fn!r}")
        if enabled != self.bf16:
            self.bf16, self.compiled, self.weights, self.failed = enabled, None, (), False

    def _call(self, args: tuple) -> Any:
        if self.compiled is not None:
            try:
                return self.compiled(*args)
            except Exception:  # noqa: BLE001 - a graph built for a state module_state missed: compile afresh once
                self.compiled = None
        target = self.fn.forward if isinstance(self.fn, nn.Module) else self.fn
        if self.bf16:
            target = bf16_call(target, device_of(self.fn))
        # Static shapes: a batch-size-generic graph (what dynamo makes after a second shape)
        # ran batch 1 slower than a graph for batch 1; each new shape compiles its own instead.
        # A code object of its own and one whole graph: dynamo keeps graphs per code object, so
        # no other instance's graph (nor an inner frame's after a graph break) can be reused
        # with the module guards skipped.
        options = {"guard_filter_fn": torch.compiler.skip_guard_on_all_nn_modules_unsafe}
        self.compiled = torch.compile(own_code(target), dynamic=False, fullgraph=True, options=options)
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
        copy = CompiledCall(deepcopy(self.fn, memo), self.what, self.always_frozen)
        copy.bf16 = self.bf16
        return copy


def cpu_runs_bf16() -> bool:
    """Whether this CPU has native bf16 arithmetic (AVX512-BF16 or AMX tiles)."""
    checks = (getattr(torch.cpu, "_is_avx512_bf16_supported", None), getattr(torch.cpu, "_is_amx_tile_supported", None))
    return any(check is not None and bool(check()) for check in checks)


def compiled_calls(module: nn.Module) -> list[CompiledCall]:
    """Every compiled call held by ``module`` or its submodules."""
    return [value for sub in module.modules() for value in vars(sub).values() if isinstance(value, CompiledCall)]


def set_compiled_bf16(module: nn.Module, enabled: bool) -> None:
    """``CompiledCall.set_bf16`` for every compiled call held by ``module`` or its submodules."""
    for call in compiled_calls(module):
        call.set_bf16(enabled)


def compiled_precision(policy: nn.Module) -> str | None:
    """What a policy's compiled inference runs in ("bf16" or "fp32"), None when it runs eagerly
    (``compile_inference`` off); for reports, which should say what ran, not what was asked."""
    if not getattr(getattr(policy, "config", None), "compile_inference", False):
        return None
    return "bf16" if any(call.bf16 for call in compiled_calls(policy)) else "fp32"


def bf16_call(fn: Callable[..., Any], device: torch.device) -> Callable[..., Any]:
    """``fn`` under bf16 autocast, its floating outputs back in fp32. Traced into a frozen graph,
    the weights' casts fold into bf16 constants: at batch 1 the weights' bytes, not arithmetic,
    bound a small network's time."""
    def call(*args: Any) -> Any:
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
            out = fn(*args)
        return tree_map(lambda t: t.float() if isinstance(t, torch.Tensor) and t.is_floating_point() else t, out)
    return call


def device_of(fn: Callable[..., Any]) -> torch.device:
    """The device of ``fn``'s module's first parameter or buffer (the CPU if it has none)."""
    first = first_tensor(owner_module(fn))
    return torch.device("cpu") if first is None else first.device


def first_tensor(module: nn.Module | None) -> torch.Tensor | None:
    """``module``'s first parameter or buffer; None for no module or one without tensors."""
    return None if module is None else next(chain(module.parameters(), module.buffers()), None)


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


def switches_of(fn: Callable[..., Any]) -> list[tuple[nn.Module, str]]:
    """The (submodule, name) of every ``SWITCHES`` attribute inside ``fn``'s module."""
    module = owner_module(fn)
    if module is None:
        return []
    return [(sub, name) for sub in module.modules() for name in SWITCHES if name in vars(sub)]


def module_state(fn: Callable[..., Any], switches: list[tuple[nn.Module, str]] = ()) -> tuple:
    """What an unfrozen graph depends on beyond its inputs' shapes: the module's mode, its
    parameters' dtype and device (the graph reads the parameters themselves on every call) and
    the ``switches`` (``switches_of``)."""
    module = owner_module(fn)
    if module is None:
        return ()
    first = first_tensor(module)
    head = (module.training,) if first is None else (module.training, first.dtype, first.device)
    return head + tuple(getattr(sub, name) for sub, name in switches)


def own_code(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A function calling ``fn`` with a code object of its own. dynamo keeps graphs per code
    object, and a frozen graph's guards do not see weights written in place; a new code object
    starts with no graphs of its own."""
    call = lambda *args: fn(*args)  # noqa: E731
    return types.FunctionType(call.__code__.replace(), call.__globals__, "frozen_call", None, call.__closure__)
