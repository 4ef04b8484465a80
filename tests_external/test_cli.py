"""``robot-learn collect`` / ``train`` take external tasks like our own (in .venv-bench)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import gym_pusht  # noqa: F401
import metaworld  # noqa: F401
import yaml

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
    assert ("robot-learn collect: error: unknown Meta-World task 'metaworld/peg-unplug'; "
            "close matches: metaworld/peg-unplug-side; valid (51): metaworld/assembly,") in out.stderr
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr


def test_unknown_metaworld_task_chosen_by_name_lists_close_matches_and_writes_nothing(tmp_path):
    out = run("train", "task=metaworld/drawer-clse", cwd=tmp_path)
    assert out.returncode == 2
    assert out.stderr.startswith("robot-learn train: error: unknown Meta-World task 'metaworld/drawer-clse'; "
                                 "close matches: metaworld/drawer-close, ")
    assert "metaworld/window-close" in out.stderr  # the full list follows
    assert out.stderr.count("\n") == 1 and list(tmp_path.iterdir()) == []


NO_YAML_TASK = "metaworld/drawer-close"
TINY_POLICY = ["policy.down_dims=[16,32]", "policy.action_horizon=8", "policy.execute_horizon=4",
               "policy.num_inference_steps=2"]


def test_a_metaworld_task_without_a_yaml_trains_and_evaluates_by_name(tmp_path):
    # `collect` by name is covered above (peg-unplug-side has no YAML either); here train
    # collects its own demos, as it does when the store is missing.
    configs = Path(__file__).resolve().parents[1] / "configs" / "task"
    assert not (configs / f"{NO_YAML_TASK}.yaml").exists()  # the generic path is what runs
    out = run("train", f"task={NO_YAML_TASK}", "train=fast", "data.episodes=2", "eval.episodes=1", "eval.workers=1",
              "eval.max_steps=5", "eval.videos=0", "run_dir=run", *TINY_POLICY, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "2/2 succeeded" in out.stdout  # Meta-World's own scripted policy is the expert
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert report["config"]["task"] == {"name": NO_YAML_TASK, "max_steps": 300, "cameras": ["front", "wrist"],
                                        "image_size": 96, "demos": 100, "demo_noise": 0.0}
    assert report["data"]["episodes"] == 2 and report["train"]["step"] == 4
    out = run("eval", f"task={NO_YAML_TASK}", "checkpoint=run", "episodes=1", "workers=1", "max_steps=5",
              "videos=0", "out_dir=eval", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    episodes = json.loads((tmp_path / "eval" / "report.json").read_text())["tasks"][NO_YAML_TASK]["per_episode"]
    assert [(e["seed"], e["length"]) for e in episodes] == [(1_000_000, 5)]


def test_pusht_image_gpu_preset_trains_and_acts_from_its_camera_at_full_size(tmp_path):
    """The GPU preset for PushT's image variant, at its own size (on the CPU here): it
    collects its one camera, trains and evaluates from pixels and `state`, no privileged key."""
    out = run("train", "task=pusht", "policy=diffusion_image_gpu", "data.episodes=2", "train.steps=2",
              "train.batch_size=4", "train.warmup_steps=1", "eval.episodes=1", "eval.max_steps=8",
              "eval.videos=0", "hydra.run.dir=run", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "pusht / diffusion_image_gpu: success" in out.stdout
    store = EpisodeStore.open(tmp_path / "data" / "pusht_demos_front_96.zarr")
    assert store.episode(0)["steps"]["images/front"].shape[1:] == (96, 96, 3)
    config = json.loads((tmp_path / "run" / "report.json").read_text())["config"]["policy"]
    assert config["camera_names"] == ["front"] and config["down_dims"] == [256, 512, 1024]
    saved = yaml.safe_load((tmp_path / "run" / "policy" / "config.yaml").read_text())["config"]
    assert saved["state_dims"] == {"state": 2} and saved["vision_channels"] == [64, 128, 256, 512]
