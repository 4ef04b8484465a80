"""NCCL: a one-rank process group on the loopback address initialises, reduces, and
carries a policy's DDP training step."""

import socket

import numpy as np
import pytest
import torch
import torch.distributed as dist
from gpu_fixtures import ACTION_DIM, CUDA, pixel_obs, tiny_pixel_policy
from torch.nn.parallel import DistributedDataParallel

from robot_learn.policies import to_torch
from robot_learn.training import PolicyLoss

pytestmark = pytest.mark.gpu


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def nccl_group():
    assert dist.is_nccl_available(), f"torch {torch.__version__} was built without NCCL"
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{_free_port()}", rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


def test_nccl_initialises_on_loopback_and_all_reduce_sums_on_the_gpu(nccl_group):
    assert dist.get_backend() == "nccl" and dist.get_world_size() == 1 and dist.get_rank() == 0
    for dtype in (torch.float32, torch.bfloat16):
        values = torch.arange(6, device=CUDA).to(dtype)
        dist.all_reduce(values, op=dist.ReduceOp.SUM)
        torch.cuda.synchronize()
        assert torch.equal(values, torch.arange(6, device=CUDA).to(dtype))  # one rank: the sum is itself
    gathered = [None]
    dist.all_gather_object(gathered, {"rank": 0})
    assert gathered == [{"rank": 0}]


def test_a_pixel_policy_takes_a_bf16_step_inside_nccl_ddp(nccl_group):
    policy = tiny_pixel_policy("diffusion").to(CUDA).train()
    model = DistributedDataParallel(PolicyLoss(policy), device_ids=[CUDA.index or 0])
    obs = pixel_obs(8, steps=policy.obs_horizon)
    actions = np.random.default_rng(1).uniform(-3, 5, size=(8, policy.action_horizon, ACTION_DIM))
    batch = to_torch({"obs": {"state": obs["state"], "images": obs["images"]}, "action": actions.astype(np.float32),
                      "instruction": obs["instruction"]}, CUDA)
    with torch.autocast(CUDA.type, dtype=torch.bfloat16):
        loss = model(batch)["loss"]
    loss.backward()  # DDP all-reduces the gradients through NCCL here
    torch.cuda.synchronize()
    grads = [p.grad for p in policy.parameters() if p.requires_grad]
    assert torch.isfinite(loss) and all(g is not None and torch.isfinite(g).all() for g in grads)
