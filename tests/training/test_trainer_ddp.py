"""The same Trainer under torchrun with two ranks (gloo, CPU): ranks stay in sync and learn."""

import csv
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from training_fixtures import build_store

SCRIPT = Path(__file__).with_name("train_tiny.py")


def _torchrun(store, out_dir, steps, *extra):
    # The project's launcher: torchrun with its rendezvous on 127.0.0.1 only.
    cmd = [sys.executable, "-m", "robot_learn.training.launch", "--nproc_per_node=2",
           str(SCRIPT), str(store), str(out_dir), "--steps", str(steps), *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180, env={**_env(), "OMP_NUM_THREADS": "1"})


def _env():
    import os

    return dict(os.environ)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "store"
    build_store(path, num_episodes=4, length=30)
    return path


def test_two_rank_ddp_keeps_ranks_identical_and_lowers_the_loss(store, tmp_path):
    proc = _torchrun(store, tmp_path, 120, "--ckpt-every", "60", "--lr", "3e-3")
    assert proc.returncode == 0, proc.stdout + proc.stderr

    rank0 = load_file(str(tmp_path / "weights_rank0.safetensors"))
    rank1 = load_file(str(tmp_path / "weights_rank1.safetensors"))
    assert set(rank0) == set(rank1)
    different = [k for k in rank0 if not torch.equal(rank0[k], rank1[k])]
    assert not different, f"ranks diverged in {different[:3]}"

    with open(tmp_path / "metrics.csv") as f:
        losses = [float(r["loss"]) for r in csv.DictReader(f)]
    assert len(losses) == 24  # only rank 0 logs: one row per 5 steps
    assert sum(losses[-3:]) < 0.75 * sum(losses[:3]), losses
    # Only rank 0 writes checkpoints, and they record both ranks' RNG/sampler streams.
    state = torch.load(tmp_path / "checkpoints" / "step_0000120" / "trainer_state.pt", weights_only=True)
    assert state["world_size"] == 2 and len(state["ranks"]) == 2
    assert state["ranks"][0]["sampler"]["bit_generator"] != state["ranks"][1]["sampler"]["bit_generator"]


def test_ddp_refuses_ranks_that_would_sample_the_same_windows(store, tmp_path):
    proc = _torchrun(store, tmp_path, 5, "--same-seed-on-all-ranks")
    assert proc.returncode != 0
    assert "identical sampler states; give each rank its own sampler seed" in proc.stdout + proc.stderr
