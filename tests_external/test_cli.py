"""``robot-learn collect`` / ``train`` take external tasks like our own (in .venv-bench)."""

import os
import subprocess
import sys
from pathlib import Path

import gym_pusht  # noqa: F401
import metaworld  # noqa: F401

from robot_learn.data import EpisodeStore

ROBOT_LEARN = str(Path(sys.executable).with_name("robot-learn"))
ENV = {**os.environ, "MUJOCO_GL": "egl", "OMP_NUM_THREADS": "1"}


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([ROBOT_LEARN, *args], cwd=cwd, capture_output=True, text=True, timeout=600, env=ENV)


def test_collect_metaworld_demos_into_a_store(tmp_path):
    out = run("collect", "task=metaworld/peg-unplug-side", "episodes=2", "out=data/mw.zarr", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "2 succeeded, 2 stored" in out.stdout
    store = EpisodeStore.open(tmp_path / "data" / "mw.zarr")
    meta = store.meta
    assert list(meta["task"]) == ["metaworld/peg-unplug-side"] * 2 and all(meta["success"])
    assert list(meta["instruction"]) == ["peg unplug side"] * 2
    ep = store.episode(0)["steps"]
    assert ep["state"].shape[1:] == (4,) and ep["env_state"].shape[1:] == (17,) and ep["action"].shape[1:] == (4,)
    assert ep["images/front"].shape[1:] == (96, 96, 3) and ep["images/wrist"].shape[1:] == (96, 96, 3)
    assert ep["progress"][0] < ep["progress"][-1]


def test_train_pusht_state_policy_end_to_end(tmp_path):
    out = run("train", "task=pusht", "train=fast", "data.episodes=2", "eval.episodes=1", "eval.max_steps=10",
              "eval.videos=1", "hydra.run.dir=run", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "2/2 succeeded" in out.stdout and "pusht / diffusion_state: success" in out.stdout
    assert (tmp_path / "run" / "report.json").is_file()
    assert (tmp_path / "run" / "videos" / "episode_000.mp4").is_file()  # the task's own camera


def test_unknown_external_task_name_is_a_one_line_error(tmp_path):
    out = run("collect", "task=pusht", "task.name=metaworld/peg-unplug", "episodes=1", cwd=tmp_path)
    assert out.returncode == 2
    assert "robot-learn collect: error: unknown Meta-World task 'metaworld/peg-unplug'; valid:" in out.stderr
    assert "metaworld/peg-unplug-side" in out.stderr and "Traceback" not in out.stderr
