"""``robot-learn train train=fast`` end to end, then ``robot-learn eval`` on its output,
and eval's errors for bad checkpoints. All real parts, tiny sizes."""

import json

import imageio.v2 as imageio
import pytest
import torch

from robot_learn.data import EpisodeStore
from robot_learn.policies import diffusion_state_config, make_policy

TINY_POLICY = ["policy.down_dims=[16,32]", "policy.action_horizon=8", "policy.execute_horizon=4",
               "policy.num_inference_steps=2", "policy.state_hidden_dims=[32]",
               "policy.state_feature_dim=16", "policy.timestep_embed_dim=16"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny full `robot-learn train` run: 2 demos, 4 steps, 2 eval episodes."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    tmp = tmp_path_factory.mktemp("train")
    script = Path(sys.executable).with_name("robot-learn")
    out = subprocess.run(
        [str(script), "train", "task=stack", "policy=diffusion_state", "train=fast",
         "data.episodes=2", "data.cameras=[]", "eval.episodes=2", "eval.workers=2",
         "eval.videos=1", "eval.max_steps=6", "run_dir=run", "train.eval_every=2",
         "eval.periodic_episodes=1", *TINY_POLICY],
        cwd=tmp, capture_output=True, text=True, timeout=400,
        env={**os.environ, "MUJOCO_GL": "egl", "OMP_NUM_THREADS": "1"})
    return tmp, out


def test_train_collects_demos_when_missing(trained):
    tmp, out = trained
    assert out.returncode == 0, out.stderr[-3000:]
    assert "collecting 2 expert episodes" in out.stdout
    assert (tmp / "data" / "stack_demos.zarr").is_dir()


def test_train_writes_report_plot_video_and_policy(trained):
    tmp, out = trained
    assert out.returncode == 0, out.stderr[-3000:]
    run = tmp / "run"
    report = json.loads((run / "report.json").read_text())
    stack = report["tasks"]["stack"]
    assert stack["episodes"] == 2
    assert [e["seed"] for e in stack["per_episode"]] == [1_000_000, 1_000_001]
    for key in ("success_rate", "ci_low", "ci_high", "mean_progress", "mean_length"):
        assert key in stack
    assert report["train"]["step"] == 4
    assert report["policy"]["type"] == "diffusion" and report["data"]["episodes"] == 2
    assert "| stack | 2 |" in (run / "report.md").read_text()
    assert (run / "success_per_task.png").stat().st_size > 1000
    frames = imageio.mimread(run / "videos" / "episode_000.mp4")
    assert len(frames) == stack["per_episode"][0]["length"] + 1
    assert (run / "policy" / "config.yaml").is_file()
    assert f"report: {run / 'report.md'}" in out.stdout


def test_train_evaluates_periodically_when_asked(trained):
    tmp, out = trained
    assert out.returncode == 0, out.stderr[-3000:]
    header = (tmp / "run" / "metrics.csv").read_text().splitlines()[0]
    assert "eval/success_rate" in header and "eval/mean_progress" in header
    assert "eval/success_rate" in json.loads((tmp / "run" / "report.json").read_text())["train"]


def test_train_reuses_the_demo_store_on_a_second_run(trained, run_cli):
    """A store is reused as it is; asking for more episodes than it holds says so."""
    tmp, _ = trained
    out = run_cli("train", "task=stack", "train=fast", "data.episodes=3", "data.cameras=[]", "eval.episodes=1",
                  "eval.workers=1", "eval.videos=0", "eval.max_steps=3", "run_dir=run2",
                  *TINY_POLICY, cwd=tmp, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "using demo store data/stack_demos.zarr" in out.stdout
    assert "collecting" not in out.stdout
    assert "fewer than data.episodes=3" in out.stdout and "give a new data.path" in out.stdout


def test_train_image_policy_on_a_state_only_store_explains_the_fix(trained, run_cli):
    tmp, _ = trained
    out = run_cli("train", "task=stack", "policy=diffusion_image", "train=fast", "run_dir=run3",
                  "data.path=data/stack_demos.zarr", cwd=tmp)
    assert out.returncode == 2
    assert "has no 'images/front'" in out.stderr and "data.path" in out.stderr


def test_train_rejects_a_bad_policy_setting_by_name(trained, run_cli):
    tmp, _ = trained
    out = run_cli("train", "train=fast", "policy.denoiser=lstm", "run_dir=run4", cwd=tmp)
    assert out.returncode == 2
    assert "unknown denoiser 'lstm'; valid choices: unet, transformer" in out.stderr


@pytest.mark.parametrize("command", ["train", "collect"])
def test_a_task_name_overridden_to_an_unknown_one_lists_valid_tasks(run_cli, command):
    out = run_cli(command, "task.name=stak")
    assert out.returncode == 2
    assert "unknown task 'stak'; valid tasks: stack, unstack, peg_insert" in out.stderr


def test_train_image_policy_end_to_end(trained, run_cli):
    """Images + instruction vocabulary: demos with cameras, a tiny vision encoder, eval."""
    tmp, _ = trained
    out = run_cli("train", "task=stack", "policy=diffusion_image", "train=fast", "data.episodes=2",
                  "policy.image_size=32", "policy.crop_size=28", "policy.vision_channels=[8,8]",
                  "policy.vision_feature_dim=16", "policy.text_dim=16", *TINY_POLICY,
                  "eval.episodes=2", "eval.videos=1", "eval.max_steps=4", "run_dir=run_img",
                  cwd=tmp, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert (tmp / "data" / "stack_demos_front_wrist_32.zarr").is_dir()
    report = json.loads((tmp / "run_img" / "report.json").read_text())
    assert report["tasks"]["stack"]["info"]["cameras"] == ["front", "wrist"]
    assert report["tasks"]["stack"]["info"]["image_size"] == 32
    assert len(imageio.mimread(tmp / "run_img" / "videos" / "episode_000.mp4")) == 5


def test_eval_a_training_run_dir_writes_its_report(trained, run_cli):
    tmp, _ = trained
    out = run_cli("eval", "checkpoint=run", "task=stack", "episodes=2", "workers=2", "videos=0",
                  "max_steps=5", "out_dir=evalout", cwd=tmp, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads((tmp / "evalout" / "report.json").read_text())
    assert report["tasks"]["stack"]["episodes"] == 2
    assert report["checkpoint"].endswith("run/policy")
    assert "success" in out.stdout and "95% CI" in out.stdout


def _saved_policy(path, **overrides):
    config = diffusion_state_config(down_dims=[16, 32], action_horizon=8, execute_horizon=4,
                                    num_inference_steps=2, **overrides)
    make_policy("diffusion", config).save(path)
    return path


@pytest.mark.parametrize("overrides,message", [
    ({"action_dim": 6}, "action dim: policy 6, caller 5"),
    ({"state_dims": {"state": 7}}, "observation 'state': policy expects (7,), caller provides (10,)"),
])
def test_eval_rejects_a_checkpoint_with_mismatched_dims(run_cli, tmp_path, overrides, message):
    _saved_policy(tmp_path / "ckpt", **overrides)
    out = run_cli("eval", "checkpoint=ckpt", "task=stack", "episodes=1")
    assert out.returncode == 2
    assert "cannot evaluate checkpoint 'ckpt' on task 'stack'" in out.stderr
    assert message in out.stderr
    assert "Traceback" not in out.stderr


def test_eval_renders_at_the_checkpoints_camera_size_unless_the_command_names_one(run_cli, tmp_path):
    """A 32 px image policy evaluates without task.image_size (the task's default is 96) and
    the report records 32; naming another size is refused with both sizes."""
    from robot_learn.policies.diffusion import diffusion_image_config

    config = diffusion_image_config(image_size=32, crop_size=28, vision_channels=[8, 8], vision_feature_dim=16,
                                    text_dim=16, down_dims=[16, 32], action_horizon=8, execute_horizon=4,
                                    num_inference_steps=2, timestep_embed_dim=16)
    make_policy("diffusion", config, instructions=["stack the red cube on the blue cube"]).save(tmp_path / "img")
    out = run_cli("eval", "checkpoint=img", "task=stack", "episodes=1", "workers=1", "videos=0", "max_steps=3",
                  "out_dir=evalout", timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads((tmp_path / "evalout" / "report.json").read_text())
    assert report["tasks"]["stack"]["info"]["image_size"] == 32
    assert report["eval_config"]["task"]["image_size"] == 32

    out = run_cli("eval", "checkpoint=img", "task=stack", "task.image_size=48", "episodes=1")
    assert out.returncode == 2
    assert "observation 'images/front': policy expects (32, 32, 3), caller provides (48, 48, 3)" in out.stderr
    assert "Traceback" not in out.stderr


def test_eval_of_a_pixel_policy_on_its_encoders_pretraining_seeds_warns(run_cli, tmp_path):
    """Frame encoders pretrain on scenes reset with seeds from 2,000,000: evaluating a policy
    with one there still runs, with a one-line warning that those layouts are not held out."""
    import numpy as np

    from robot_learn.policies.diffusion import diffusion_pixels_config
    from robot_learn.policies.frame_encoder import FEATURES_KEY

    encoder = dict(cameras=["front"], image_size=32, channels=[8, 16], num_keypoints=8, camera_dim=16,
                   feature_dim=12, vocab=["put", "red", "cube"], text_dim=8, label_names=["x", "y"], output="latent")
    config = diffusion_pixels_config(frame_encoder=encoder, down_dims=[16, 32], action_horizon=8, execute_horizon=4,
                                     num_inference_steps=2, timestep_embed_dim=16)

    def stats(d: int) -> dict:
        return {"min": -np.ones(d), "max": np.ones(d), "mean": np.zeros(d), "std": np.ones(d),
                "q01": -np.ones(d), "q99": np.ones(d)}

    make_policy("diffusion", config, {"state": stats(10), FEATURES_KEY: stats(12), "action": stats(5)}).save(
        tmp_path / "px")
    out = run_cli("eval", "checkpoint=px", "task=bin_place", "seed=2000000", "episodes=1", "workers=1", "videos=0",
                  "max_steps=2", "out_dir=evalpx", timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "warning: seeds 2000000..2000000 overlap the seeds frame encoders pretrain on" in out.stderr
    report = json.loads((tmp_path / "evalpx" / "report.json").read_text())
    assert report["tasks"]["bin_place"]["info"]["image_size"] == 32


def test_eval_rejects_another_policy_type(run_cli, tmp_path):
    _saved_policy(tmp_path / "ckpt")
    out = run_cli("eval", "checkpoint=ckpt", "task=stack", "policy_type=vla")
    assert out.returncode == 2
    assert "holds a 'diffusion' policy but a 'vla' policy was requested" in out.stderr


def test_eval_rejects_an_unregistered_policy_type_listing_valid_ones(run_cli, tmp_path):
    config = _saved_policy(tmp_path / "ckpt") / "config.yaml"
    config.write_text(config.read_text().replace("type: diffusion", "type: lstm", 1))
    out = run_cli("eval", "checkpoint=ckpt", "task=stack")
    assert out.returncode == 2
    assert "unknown policy 'lstm'; valid policies: diffusion" in out.stderr


def test_eval_rejects_a_missing_checkpoint(run_cli):
    out = run_cli("eval", "checkpoint=nowhere", "task=stack")
    assert out.returncode == 2 and "checkpoint 'nowhere' does not exist" in out.stderr


def test_eval_rejects_a_checkpoint_without_weights(run_cli, tmp_path):
    (_saved_policy(tmp_path / "ckpt") / "model.safetensors").unlink()
    out = run_cli("eval", "checkpoint=ckpt", "task=stack")
    assert out.returncode == 2 and "has no model.safetensors" in out.stderr


def test_eval_rejects_a_corrupt_weights_file(run_cli, tmp_path):
    weights = _saved_policy(tmp_path / "ckpt") / "model.safetensors"
    weights.write_bytes(b"\x00garbage" * 10)
    out = run_cli("eval", "checkpoint=ckpt", "task=stack")
    assert out.returncode == 2
    assert "is corrupt or not a safetensors file" in out.stderr


def test_eval_rejects_a_directory_that_is_not_a_checkpoint(run_cli, tmp_path):
    (tmp_path / "empty").mkdir()
    out = run_cli("eval", "checkpoint=empty", "task=stack")
    assert out.returncode == 2 and "has no config.yaml" in out.stderr


torch.set_num_threads(1)


def test_train_the_two_mode_task_with_a_state_policy_reading_objects(trained, run_cli):
    """task=bin_either (either of two identical cubes into the bin): a diffusion_state policy
    reading every object's pose, as the task's config says."""
    tmp, _ = trained
    out = run_cli("train", "task=bin_either", "policy=diffusion_state", "+policy.state_dims={state: 10, objects: 45}",
                  "train=fast", "data.episodes=2", "data.cameras=[]", "eval.episodes=1", "eval.videos=0",
                  "eval.max_steps=4", "run_dir=run_either", *TINY_POLICY, cwd=tmp, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    store = EpisodeStore.open(tmp / "data" / "bin_either_demos.zarr")
    assert store.schema["objects"]["shape"] == [45] and store.view(success=True).num_episodes == 2
    assert "bin_either" in json.loads((tmp / "run_either" / "report.json").read_text())["tasks"]


def test_train_object_slot_vla_collects_the_objects_key(trained, run_cli):
    """policy=discrete_diffusion_objects: demos record the colour-ordered object slots."""
    tmp, _ = trained
    out = run_cli("train", "task=stack", "policy=discrete_diffusion_objects", "train=fast", "data.episodes=2",
                  "data.path=data/stack_objects.zarr", "policy.hidden_dim=32", "policy.num_layers=1",
                  "policy.decoding_rounds=2", "eval.episodes=1", "eval.videos=0", "eval.max_steps=4",
                  "run_dir=run_objects", cwd=tmp, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert EpisodeStore.open(tmp / "data" / "stack_objects.zarr").schema["objects"]["shape"] == [45]
    # The state-only store of the same task lacks the key: a clear error, not a crash.
    out = run_cli("train", "task=stack", "policy=discrete_diffusion_objects", "train=fast", "data.episodes=2",
                  "run_dir=run_objects2", cwd=tmp)
    assert out.returncode != 0 and "has no 'objects'" in out.stderr
