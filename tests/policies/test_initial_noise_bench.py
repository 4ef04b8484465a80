"""``benchmarks/bench_initial_noise.py``: every arm runs on the same seeds of the real task, and bad arms or
checkpoints are one-line errors before anything runs."""

import os
import subprocess
import sys
from pathlib import Path

from robot_learn.policies import diffusion_state_config, make_policy

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_initial_noise.py"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "MUJOCO_GL": "egl"})


def saved_policy(path: Path, **changes) -> Path:
    config = diffusion_state_config(down_dims=[16, 32], action_horizon=8, execute_horizon=4, num_inference_steps=2,
                                    **changes)
    make_policy("diffusion", config).save(path)
    return path


def test_every_arm_runs_on_the_same_seeds_and_is_paired_with_the_first(tmp_path):
    policy = saved_policy(tmp_path / "policy")
    proc = run(str(policy), "--sets", "1000000:2", "1100000:1", "--max-steps", "5",
               "--arms", "noise:1", "noise:1:g1", "noise:0", "mean:3")
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [line.strip() for line in proc.stdout.splitlines() if "/3 = " in line]
    assert [line.split(":")[0] + ":" + line.split(":")[1] for line in lines] == \
        ["noise:1", "noise:1", "noise:0", "mean:3"]
    assert "against" not in lines[0] and all("against noise:1: won " in line for line in lines[1:])


def test_bad_arms_and_checkpoints_are_one_line_errors(tmp_path):
    policy = saved_policy(tmp_path / "policy")
    for arm in ("noise:-1", "noise:x", "noise:inf", "mean:0", "noise:1:7", "steps:5"):
        proc = run(str(policy), "--arms", "noise:1", arm)
        assert proc.returncode == 1 and f"arm '{arm}': valid forms noise:S (S >= 0), noise:S:gG, mean:K" in proc.stderr
        assert "Traceback" not in proc.stderr
    proc = run(str(saved_policy(tmp_path / "mip", head="mip")), "--arms", "noise:0")
    assert proc.returncode == 1 and "samples with head 'mip'" in proc.stderr and "Traceback" not in proc.stderr
    for sets in ("1000000", "1000000:0"):
        proc = run(str(policy), "--sets", sets)
        assert proc.returncode == 1 and "each must be FIRST_SEED:EPISODES" in proc.stderr
    proc = run(str(tmp_path / "nowhere"), "--arms", "noise:0")
    assert proc.returncode == 1 and "nowhere" in proc.stderr and "Traceback" not in proc.stderr
