"""Process-group setup for single-process and torchrun (DDP) training."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from robot_learn.training.config import check_device


@dataclass
class DistContext:
    """Where this process sits in the job: rank, world size and its device."""

    rank: int
    world_size: int
    local_rank: int
    device: torch.device
    owns_group: bool = False  # True when we created the process group and must destroy it

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    def all_reduce_mean(self, value: torch.Tensor) -> torch.Tensor:
        """Mean of ``value`` over ranks (identity in a single process)."""
        if not self.distributed:
            return value
        out = value.detach().clone()
        dist.all_reduce(out, op=dist.ReduceOp.SUM)
        return out / self.world_size

    def gather_objects(self, obj: Any) -> list[Any]:
        """Every rank's ``obj``, in rank order (a one-element list in a single process)."""
        if not self.distributed:
            return [obj]
        out: list[Any] = [None] * self.world_size
        dist.all_gather_object(out, obj)
        return out

    def barrier(self) -> None:
        if self.distributed:
            dist.barrier()

    def close(self) -> None:
        if self.owns_group and dist.is_initialized():
            dist.destroy_process_group()
            self.owns_group = False


def resolve_device(device: str, local_rank: int = 0) -> torch.device:
    """``auto`` -> ``cuda:<local_rank>`` when CUDA is available, else ``cpu``."""
    if device == "auto":
        return torch.device(f"cuda:{local_rank}") if torch.cuda.is_available() else torch.device("cpu")
    if device.startswith("cuda"):
        check_device(device)
    if device == "cuda":
        return torch.device(f"cuda:{local_rank}")
    return torch.device(device)


def init_distributed(device: str = "auto", backend: str = "auto") -> DistContext:
    """Join the torchrun process group when ``WORLD_SIZE > 1``; otherwise a single-process context.

    torchrun sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT; the
    group is initialised from them (``env://``).
    """
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size <= 1:
        return DistContext(rank=0, world_size=1, local_rank=0, device=resolve_device(device))
    rank = int(os.environ["RANK"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    dev = resolve_device(device, local_rank)
    if dev.type == "cuda":
        torch.cuda.set_device(dev)
    owns = False
    if not dist.is_initialized():
        chosen = backend if backend != "auto" else ("nccl" if dev.type == "cuda" else "gloo")
        dist.init_process_group(backend=chosen, init_method="env://", rank=rank, world_size=world_size)
        owns = True
    return DistContext(rank=rank, world_size=world_size, local_rank=local_rank, device=dev, owns_group=owns)


class PolicyLoss(nn.Module):
    """Routes ``forward`` to ``policy.compute_loss`` so DDP sees the loss computation.

    DistributedDataParallel only synchronises gradients for work done inside the
    wrapped module's ``forward``; calling ``compute_loss`` directly would bypass it.
    """

    def __init__(self, policy: nn.Module) -> None:
        super().__init__()
        self.policy = policy

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        return self.policy.compute_loss(batch)


def wrap_policy_for_training(policy: nn.Module, ctx: DistContext, find_unused_parameters: bool = False) -> nn.Module:
    """``PolicyLoss(policy)``, inside DistributedDataParallel when running under torchrun.

    Wrapping in DDP broadcasts rank 0's parameters and buffers to every rank.
    """
    module = PolicyLoss(policy)
    if not ctx.distributed:
        return module
    return DistributedDataParallel(
        module,
        device_ids=[ctx.device.index] if ctx.device.type == "cuda" else None,
        find_unused_parameters=find_unused_parameters,
    )
