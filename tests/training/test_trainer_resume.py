"""Exact resume: a run SIGKILLed after a checkpoint and resumed ends bit-identical to an uninterrupted run."""

import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import torch
from safetensors.torch import load_file
from training_fixtures import build_store

SCRIPT = Path(__file__).with_name("train_tiny.py")
STEPS, CKPT_EVERY = 150, 20


def _train(store, out_dir, **popen_kwargs):
    cmd = [sys.executable, str(SCRIPT), str(store), str(out_dir), "--steps", str(STEPS), "--ckpt-every", str(CKPT_EVERY)]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **popen_kwargs)


def _finish(proc, timeout=120):
    out, _ = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, out


def _losses(out_dir):
    with open(Path(out_dir) / "metrics.csv") as f:
        return [(int(r["step"]), float(r["loss"])) for r in csv.DictReader(f)]


def test_training_killed_after_a_checkpoint_resumes_to_identical_weights(tmp_path):
    store = tmp_path / "store"
    build_store(store, num_episodes=4, length=30)

    reference = tmp_path / "uninterrupted"
    _finish(_train(store, reference))

    killed = tmp_path / "killed"
    proc = _train(store, killed)
    latest = killed / "checkpoints" / "latest"
    deadline = time.monotonic() + 120
    while not latest.exists():  # poll: kill as soon as the first checkpoint is committed
        assert proc.poll() is None, proc.communicate()[0]
        assert time.monotonic() < deadline, "no checkpoint appeared"
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    killed_at = int(latest.read_text().strip().removeprefix("step_"))
    assert killed_at < STEPS and not (killed / "weights_rank0.safetensors").exists(), "the run was not cut short"

    _finish(_train(store, killed))  # a fresh process: resumes from `latest` on its own

    want, got = load_file(str(reference / "weights_rank0.safetensors")), load_file(str(killed / "weights_rank0.safetensors"))
    assert set(want) == set(got) and any(k.startswith("ema.") for k in want)
    different = [k for k in want if not torch.equal(want[k], got[k])]
    assert not different, f"{len(different)} tensors differ after resume from step {killed_at}, e.g. {different[:3]}"
    # The log was continued, not restarted: same steps and the very same losses.
    assert _losses(killed) == _losses(reference)
