"""``robot-learn train`` under two gloo ranks, launched as the README says
(``python -m robot_learn.training.launch --nproc_per_node=2 -m robot_learn.cli.main train``):
one rank collects the demos, pretrains the frame encoder, builds the feature cache,
evaluates and writes the report; both share one run dir; and the run resumes under DDP."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from robot_learn.data import EpisodeStore

TINY = ["task=bin_place", "policy=diffusion_pixels", "data.episodes=2", "data.path=data/px.zarr",
        "policy.frame_pretraining.resets=16", "policy.frame_pretraining.expert_episodes=1",
        "policy.frame_pretraining.steps=3", "policy.frame_pretraining.batch_size=8",
        "policy.frame_pretraining.finetune_steps=2", "policy.frame_pretraining.finetune_batch_size=4",
        "+policy.down_dims=[16,32]", "+policy.action_horizon=8", "+policy.execute_horizon=4",
        "policy.num_inference_steps=2", "train=fast", "train.batch_size=4", "eval.episodes=2",
        "eval.workers=1", "eval.max_steps=4", "eval.videos=0", "run_dir=run"]


def _launch(cwd, *extra: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "robot_learn.training.launch", "--nproc_per_node=2",
               "-m", "robot_learn.cli.main", "train", *TINY, *extra]
    env = {**os.environ, "MUJOCO_GL": "egl", "OMP_NUM_THREADS": "1", "HYDRA_FULL_ERROR": "0"}
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600, env=env)


@pytest.fixture(scope="module")
def ddp_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ddp_cli")
    return tmp, _launch(tmp, "train.steps=4")


def test_two_ranks_share_one_run_and_rank_zero_does_the_single_jobs(ddp_run):
    tmp, out = ddp_run
    assert out.returncode == 0, out.stderr[-4000:]
    assert out.stdout.count("[1/4] no demo store") == 1 and EpisodeStore.open(tmp / "data" / "px.zarr").num_episodes == 2
    assert len(list((tmp / "data" / "frame_encoders").glob("*/model.safetensors"))) == 1
    assert out.stdout.count("frame encoder saved to") == 1  # pretrained once, loaded by the other rank
    assert out.stdout.count("building the features cache") == 1
    assert out.stdout.count("[4/4] evaluating") == 1
    report = json.loads((tmp / "run" / "report.json").read_text())
    assert report["tasks"]["bin_place"]["episodes"] == 2 and report["train"]["world_size"] == 2
    assert (tmp / "run" / "checkpoints" / "step_0000004").is_dir()
    assert [p.name for p in tmp.iterdir() if p.name.startswith("outputs")] == []  # no second run dir


def test_the_run_resumes_under_two_ranks(ddp_run):
    tmp, first = ddp_run
    assert first.returncode == 0, first.stderr[-4000:]
    out = _launch(tmp, "train.steps=6")
    assert out.returncode == 0, out.stderr[-4000:]
    assert out.stdout.count("resuming from step 4 of run_dir") == 2  # every rank loads the checkpoint
    assert (tmp / "run" / "checkpoints" / "step_0000006").is_dir()
    assert "frame encoder saved to" not in out.stdout  # the encoder of the first run is reused
