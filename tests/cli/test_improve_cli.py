import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TINY = ["train=fast", "base_train_steps=4", "loop.episodes=2", "loop.train_steps=4", "loop.eval_episodes=2",
        "task.demos=3", "task.max_steps=40", "loop.critic_steps=20"]


def run_cli(args, cwd, timeout=240):
    script = Path(sys.executable).with_name("robot-learn")
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "robot_learn.cli.main"]
    env = {**os.environ, "MUJOCO_GL": "egl", "PYOPENGL_PLATFORM": "egl", "OMP_NUM_THREADS": "1"}
    return subprocess.run([*cmd, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def test_one_round_of_improve_hitl_runs_on_cpu_and_writes_reports(tmp_path):
    out = run_cli(["improve", "loop=hitl", "rounds=1", *TINY], tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    run = tmp_path / "outputs/improve/stack_hgdagger"
    rounds = json.loads((run / "rounds.json").read_text())
    assert [r["round"] for r in rounds] == [0, 1]
    r1 = rounds[1]
    assert r1["collected_episodes"] == 2 and r1["human_seconds"] > 0
    assert r1["data_added"] == {"intervention": 2}
    assert 0 <= r1["ci_low"] <= r1["success_rate"] <= r1["ci_high"] <= 1
    assert (run / "success_vs_round.png").stat().st_size > 0
    assert (run / "success_vs_human_seconds.png").stat().st_size > 0
    assert "| 1 |" in (run / "rounds.md").read_text()
    # A killed round resumes: drop round 1's report, keep its episodes; rerun adds none.
    (run / "round_01/report.json").unlink()
    again = run_cli(["improve", "loop=hitl", "rounds=1", *TINY], tmp_path)
    assert again.returncode == 0, again.stderr[-2000:]
    rounds = json.loads((run / "rounds.json").read_text())
    assert rounds[1]["collected_episodes"] == 2


def test_unknown_hitl_method_is_a_clear_error(tmp_path):
    out = run_cli(["improve", "loop.method=dagger", *TINY], tmp_path)
    assert out.returncode != 0
    assert "unknown HITL method 'dagger'; valid methods: hgdagger, hgdagger_curated, recap, autonomous" in out.stderr
