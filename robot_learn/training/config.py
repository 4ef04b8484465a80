"""Training configuration: plain dataclasses that Hydra can instantiate and YAML can hold."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from robot_learn.policies.config_checks import check_field_types

_DEVICE_PATTERN = re.compile(r"^(auto|cpu|cuda(:\d+)?)$")
VALID_DEVICES = "auto, cpu, cuda, cuda:N"
OPTIMIZER_IMPLS = ("fused", "foreach", "for_loop")


def check_device_name(device: str) -> str:
    """Return ``device`` if it is ``auto``, ``cpu``, ``cuda`` or ``cuda:N``; ValueError otherwise."""
    if not _DEVICE_PATTERN.match(str(device)):
        raise ValueError(f"unknown device '{device}'; valid devices: {VALID_DEVICES}")
    return str(device)


def check_device(device: str) -> str:
    """Return ``device`` if it is a valid name (see :func:`check_device_name`) that this
    machine has; ValueError naming it and the devices that are here otherwise."""
    import torch

    check_device_name(device)
    if not device.startswith("cuda"):
        return device
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count == 0:
        raise ValueError(f"device '{device}' requested but CUDA is not available; valid devices here: auto, cpu")
    index = int(device.split(":")[1]) if ":" in device else 0
    if index >= count:
        raise ValueError(f"device '{device}' does not exist; valid devices here: auto, cpu, cuda, "
                         f"cuda:0..cuda:{count - 1}")
    return device


@dataclass
class EMAConfig:
    """Settings for diffusers' ``EMAModel`` over the policy parameters.

    With ``use_warmup`` the decay at optimisation step ``s`` is
    ``1 - (1 + s / inv_gamma) ** -power`` clipped to ``[min_decay, decay]``;
    ``power=0.75`` is the Diffusion Policy recipe (reaches 0.999 around 10k steps).
    """

    enabled: bool = True
    decay: float = 0.9999
    min_decay: float = 0.0
    power: float = 0.75
    inv_gamma: float = 1.0
    update_after_step: int = 0
    use_warmup: bool = True

    def __post_init__(self) -> None:
        check_field_types(self)
        # EMAModel.load_state_dict insists on floats; YAML may give ints (e.g. min_decay: 0).
        for name in ("decay", "min_decay", "power", "inv_gamma"):
            setattr(self, name, float(getattr(self, name)))
        if not 0.0 <= self.min_decay <= self.decay <= 1.0:
            raise ValueError(
                f"ema decays must satisfy 0 <= min_decay <= decay <= 1; "
                f"got min_decay={self.min_decay}, decay={self.decay}"
            )
        if self.power <= 0 or self.inv_gamma <= 0:
            raise ValueError(
                f"ema power and inv_gamma must be > 0; got power={self.power}, inv_gamma={self.inv_gamma}"
            )


@dataclass
class TrainConfig:
    """Everything the :class:`~robot_learn.training.Trainer` needs besides policy and data.

    Instantiate from YAML with ``_target_: robot_learn.training.TrainConfig``;
    nested ``ema`` may be a plain mapping. ``to_dict()`` gives a YAML-safe dict.

    Step-based intervals (``ckpt_every``, ``eval_every``, ``log_every``) of 0 disable
    the periodic action; a checkpoint and the final EMA policy are always written at
    the end of :meth:`Trainer.fit`.
    """

    steps: int = 1000
    batch_size: int = 64
    lr: float = 1e-4
    weight_decay: float = 1e-6
    betas: tuple[float, float] = (0.95, 0.999)
    warmup_steps: int = 500
    grad_clip: float = 1.0  # max global grad norm; 0 disables clipping
    # AdamW's implementation: fused (one kernel over all parameters; the measured best on
    # CPU, benchmarks/bench_optimizer.py), foreach (grouped ops) or for_loop (one parameter at a time)
    optimizer_impl: str = "fused"
    prefetch: int = 0  # batches a background thread draws ahead (robot_learn.data.prefetch); 0: off
    ema: EMAConfig = field(default_factory=EMAConfig)
    ckpt_every: int = 1000
    keep_last_k: int = 3  # 0 keeps every checkpoint
    eval_every: int = 0
    log_every: int = 10
    out_dir: str = "outputs/train"
    seed: int = 0
    device: str = "auto"  # auto -> cuda if available else cpu
    amp: bool = True  # bf16 autocast on CUDA
    # bf16 autocast on the CPU, where it runs bf16 natively (AVX512-BF16 or AMX; elsewhere fp32 with
    # a warning). Off by default: no gain on make demo, slower for the VLA (robot_learn/training/precision.py)
    cpu_amp: bool = False
    wandb: bool = False
    wandb_project: str = "robot-learn"
    num_threads: int = 0  # torch intra-op threads; 0 leaves torch's default
    resume: bool = True  # continue from out_dir/checkpoints/latest when present
    progress_bar: bool = True
    ddp_backend: str = "auto"  # auto -> nccl on CUDA, gloo on CPU
    ddp_find_unused_parameters: bool = False

    def __post_init__(self) -> None:
        check_field_types(self)
        # Hydra/OmegaConf hand nested configs over as mappings and tuples as lists.
        if isinstance(self.ema, Mapping):
            self.ema = EMAConfig(**dict(self.ema))
        elif isinstance(self.ema, bool):
            self.ema = EMAConfig(enabled=self.ema)
        self.betas = tuple(float(b) for b in self.betas)  # type: ignore[assignment]
        if len(self.betas) != 2 or not all(0.0 <= b < 1.0 for b in self.betas):
            raise ValueError(f"betas must be two numbers in [0, 1); got {self.betas}")
        for name in ("steps", "batch_size"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be >= 1; got {getattr(self, name)}")
        for name in ("warmup_steps", "ckpt_every", "keep_last_k", "eval_every", "log_every", "num_threads",
                     "prefetch"):
            if int(getattr(self, name)) < 0:
                raise ValueError(f"{name} must be >= 0; got {getattr(self, name)}")
        if self.lr <= 0:
            raise ValueError(f"lr must be > 0; got {self.lr}")
        if self.grad_clip < 0:
            raise ValueError(f"grad_clip must be >= 0 (0 disables); got {self.grad_clip}")
        check_device_name(self.device)
        if self.optimizer_impl not in OPTIMIZER_IMPLS:
            raise ValueError(f"unknown optimizer_impl '{self.optimizer_impl}'; valid: {', '.join(OPTIMIZER_IMPLS)}")
        if self.ddp_backend not in ("auto", "gloo", "nccl"):
            raise ValueError(f"unknown ddp_backend '{self.ddp_backend}'; valid backends: auto, gloo, nccl")

    def to_dict(self) -> dict[str, Any]:
        """A YAML-serialisable dict (tuples become lists)."""
        out = dataclasses.asdict(self)
        out["betas"] = list(self.betas)
        return out

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> "TrainConfig":
        """Build from a mapping such as ``yaml.safe_load`` output; unknown keys are an error."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known - {"_target_"})
        if unknown:
            raise ValueError(f"unknown TrainConfig keys {unknown}; valid keys: {', '.join(sorted(known))}")
        return cls(**{k: v for k, v in values.items() if k != "_target_"})
