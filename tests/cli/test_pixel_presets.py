"""``robot-learn train policy=diffusion_pixels`` end to end at tiny sizes: demos with
cameras, a frame encoder pretrained on rendered scenes, its features cached in the store,
a policy that deploys from cameras + state + words; and the pixel presets' bad input."""

from __future__ import annotations

import json

import pytest

from robot_learn.data import EpisodeStore
from robot_learn.policies import load_policy

TINY = ["task=bin_place", "policy=diffusion_pixels", "data.episodes=2", "data.path=data/px.zarr",
        "policy.frame_pretraining.resets=24", "policy.frame_pretraining.expert_episodes=1",
        "policy.frame_pretraining.steps=3", "policy.frame_pretraining.batch_size=8",
        "policy.frame_pretraining.finetune_steps=0",
        "+policy.down_dims=[16,32]", "+policy.action_horizon=8", "+policy.execute_horizon=4",
        "policy.num_inference_steps=2", "train=fast", "train.steps=3", "eval.episodes=2",
        "eval.max_steps=6", "eval.videos=0"]


@pytest.fixture(scope="module")
def pixel_run(tmp_path_factory):
    import os
    import subprocess
    import sys
    from pathlib import Path

    tmp = tmp_path_factory.mktemp("pixels")
    script = Path(sys.executable).with_name("robot-learn")

    def run(*extra: str):
        return subprocess.run([str(script), "train", *TINY, *extra], cwd=tmp, capture_output=True, text=True,
                              timeout=600, env={**os.environ, "MUJOCO_GL": "egl", "OMP_NUM_THREADS": "1"})

    return tmp, run("run_dir=run1"), run


def test_pixel_preset_pretrains_caches_trains_and_evaluates(pixel_run):
    tmp, out, _ = pixel_run
    assert out.returncode == 0, out.stderr[-3000:]
    assert "frame encoder saved to" in out.stdout and "building the features cache" in out.stdout
    report = json.loads((tmp / "run1" / "report.json").read_text())
    assert report["tasks"]["bin_place"]["episodes"] == 2
    encoders = list((tmp / "data" / "frame_encoders").glob("*/model.safetensors"))
    assert len(encoders) == 1
    assert (tmp / "data" / "px.zarr" / "derived" / "features").is_dir()


def test_saved_pixel_policy_reads_no_privileged_key(pixel_run):
    tmp, out, _ = pixel_run
    assert out.returncode == 0, out.stderr[-3000:]
    policy = load_policy(tmp / "run1" / "policy")
    assert set(policy.obs_shapes) == {"state", "images/front", "images/wrist"}


def test_second_run_reuses_the_encoder_and_the_cache(pixel_run):
    tmp, out, run = pixel_run
    assert out.returncode == 0, out.stderr[-3000:]
    again = run("run_dir=run2")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "using the frame encoder in" in again.stdout and "using cached features" in again.stdout


def test_pixel_preset_on_a_store_without_images_is_one_line_error(pixel_run, run_cli):
    tmp, _, _ = pixel_run
    episode = EpisodeStore.open(tmp / "data" / "px.zarr").episode(0)
    state_only = EpisodeStore.create(tmp / "data" / "state_only.zarr")
    state_only.append_episode({k: v for k, v in episode["steps"].items() if not k.startswith("images/")},
                              episode["meta"])
    del state_only
    out = run_cli("train", *TINY, f"data.path={tmp / 'data' / 'state_only.zarr'}", "run_dir=run3")
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "has no 'images/front'" in lines[0] and "Traceback" not in out.stderr


def test_pixel_preset_with_another_resolution_is_one_line_error(pixel_run, run_cli):
    tmp, _, _ = pixel_run
    out = run_cli("train", *TINY, f"data.path={tmp / 'data' / 'px.zarr'}", "+policy.frame_encoder.image_size=64",
                  "run_dir=run4")
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "(96, 96, 3)" in lines[0] and "(64, 64, 3)" in lines[0]


def test_poses_output_reuses_the_encoder_and_trains_on_the_true_poses(pixel_run):
    """output=poses shares the pretrained encoder (output is not part of its key), trains
    on the demo frames' true object poses, and deploys on the encoder's predictions."""
    tmp, out, run = pixel_run
    assert out.returncode == 0, out.stderr[-3000:]
    poses = run("run_dir=run5", "+policy.frame_encoder.output=poses")
    assert poses.returncode == 0, poses.stderr[-3000:]
    assert "using the frame encoder in" in poses.stdout and "features cache" not in poses.stdout
    policy = load_policy(tmp / "run5" / "policy")
    assert policy.frame_encoder.config.output == "poses" and policy.config.state_dims["features"] == 10
    assert set(policy.obs_shapes) == {"state", "images/front", "images/wrist"}


def test_poses_output_on_a_store_without_env_state_is_one_line_error(pixel_run, run_cli):
    tmp, _, _ = pixel_run
    episode = EpisodeStore.open(tmp / "data" / "px.zarr").episode(0)
    no_env_state = EpisodeStore.create(tmp / "data" / "no_env_state.zarr")
    no_env_state.append_episode({k: v for k, v in episode["steps"].items() if k != "env_state"}, episode["meta"])
    del no_env_state
    out = run_cli("train", *TINY, f"data.path={tmp / 'data' / 'no_env_state.zarr'}",
                  "+policy.frame_encoder.output=poses", "run_dir=run6")
    assert out.returncode == 2, out.stderr[-2000:]
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "has no 'env_state'" in lines[0] and "output=latent" in lines[0]


def test_encoder_finetuning_reuses_the_encoder_and_changes_it_inside_the_policy(pixel_run):
    """finetune_steps > 0: the same pretrained encoder (fine-tuning is not part of its
    key), then a second phase on raw frames in run_dir/encoder_finetune, at its own batch
    (finetune_batch_size), whose policy's encoder has moved away from the pretrained
    weights, while the first phase's has not."""
    import torch
    import yaml
    from safetensors.torch import load_file

    tmp, out, run = pixel_run
    assert out.returncode == 0, out.stderr[-3000:]
    tuned = run("run_dir=run7", "policy.frame_pretraining.finetune_steps=3", "policy.frame_pretraining.finetune_lr=1e-2",
                "policy.frame_pretraining.finetune_batch_size=3")
    assert tuned.returncode == 0, tuned.stderr[-3000:]
    phases = [yaml.safe_load((tmp / "run7" / d / "train_config.yaml").read_text()) for d in (".", "encoder_finetune")]
    assert [p["batch_size"] for p in phases] == [train_batch(tmp / "run7"), 3]
    assert "using the frame encoder in" in tuned.stdout and "fine-tuning the frame encoder" in tuned.stdout
    report = json.loads((tmp / "run7" / "report.json").read_text())
    assert report["policy"]["dir"].endswith("encoder_finetune/policy") and report["train"]["finetune_time"] > 0
    [encoder_dir] = (tmp / "data" / "frame_encoders").glob("*/model.safetensors")
    pretrained = load_file(encoder_dir)
    frozen, finetuned = load_policy(tmp / "run7" / "policy"), load_policy(tmp / "run7" / "encoder_finetune" / "policy")
    for name, weight in pretrained.items():
        assert torch.equal(frozen.frame_encoder.state_dict()[name], weight), name
    moved = [n for n, w in pretrained.items() if not torch.equal(finetuned.frame_encoder.state_dict()[n], w)]
    assert moved and any("weight" in n for n in moved)
    assert not finetuned.encoder_trainable  # a loaded policy deploys with a frozen encoder
    assert set(finetuned.obs_shapes) == {"state", "images/front", "images/wrist"}


def test_cpu_bf16_pretrains_and_fine_tunes_in_bf16_on_a_bf16_cpu_and_fp32_is_another_encoder(pixel_run):
    """frame_pretraining.cpu_bf16=true: pretraining (its record says the precision)
    and the fine-tuning phase (train.cpu_amp in its config) under bf16 autocast where the CPU runs
    bf16, fp32 elsewhere (the fine-tuning phase then sets no train.cpu_amp, whose warning would name a
    setting the user never set); there it is another encoder than the default's (fp32, which the
    fixture's run pretrained and cpu_bf16=false reuses)."""
    import yaml

    from robot_learn.training.precision import cpu_runs_bf16

    tmp, out, run = pixel_run
    assert out.returncode == 0, out.stderr[-3000:]
    tuned = ("policy.frame_pretraining.finetune_steps=2", "policy.frame_pretraining.finetune_batch_size=3")
    fp32 = run("run_dir=run_fp32", "policy.frame_pretraining.cpu_bf16=false", *tuned)
    bf16 = run("run_dir=run_bf16", "policy.frame_pretraining.cpu_bf16=true", *tuned)
    assert fp32.returncode == 0 and bf16.returncode == 0, (fp32.stderr + bf16.stderr)[-3000:]
    assert "using the frame encoder in" in fp32.stdout
    assert ("frame encoder saved to" if cpu_runs_bf16() else "using the frame encoder in") in bf16.stdout
    records = [json.loads(p.read_text()) for p in (tmp / "data" / "frame_encoders").glob("*/pretraining.json")]
    assert sorted(r["precision"] for r in records) == sorted(["fp32"] + (["bf16"] if cpu_runs_bf16() else []))
    for run_dir, cpu_amp in (("run_fp32", False), ("run_bf16", cpu_runs_bf16())):
        phases = [yaml.safe_load((tmp / run_dir / d / "train_config.yaml").read_text())
                  for d in (".", "encoder_finetune")]
        assert [p["cpu_amp"] for p in phases] == [False, cpu_amp], run_dir


def train_batch(run_dir) -> int:
    return json.loads((run_dir / "report.json").read_text())["config"]["train"]["batch_size"]


@pytest.mark.parametrize("setting", ["finetune_steps=-1", "finetune_batch_size=-1"])
def test_negative_finetune_setting_is_one_line_error(run_cli, tmp_path, setting):
    out = run_cli("train", *TINY, f"policy.frame_pretraining.{setting}", f"run_dir={tmp_path / 'run'}")
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and setting in lines[0] and "Traceback" not in out.stderr
    assert not (tmp_path / "run").exists() or not any((tmp_path / "run").rglob("*.safetensors"))


def test_the_vla_ensemble_preset_trains_evaluates_and_deploys_from_cameras(pixel_run, run_cli_in):
    """policy=discrete_diffusion_pixels_ensemble: one run trains both members (train.batch_size
    shared out), evaluates the ensemble, and saves one policy with one frame encoder."""
    tmp, out, _ = pixel_run
    assert out.returncode == 0, out.stderr[-3000:]
    run = run_cli_in(tmp, "train", "task=bin_place", "policy=discrete_diffusion_pixels_ensemble", "policy.members=2",
                     "data.episodes=2", "data.path=data/px.zarr", "policy.frame_pretraining.resets=24",
                     "policy.frame_pretraining.expert_episodes=1", "policy.frame_pretraining.steps=3",
                     "+policy.frame_pretraining.batch_size=8", "policy.hidden_dim=32", "policy.num_layers=1",
                     "policy.num_bins=32", "policy.decoding_rounds=2", "policy.execute_horizon=4", "train=fast",
                     "train.steps=3", "train.batch_size=4", "eval.episodes=2", "eval.max_steps=6", "eval.videos=0",
                     "run_dir=run8", timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert json.loads((tmp / "run8" / "report.json").read_text())["tasks"]["bin_place"]["episodes"] == 2
    policy = load_policy(tmp / "run8" / "policy", expected_type="discrete_diffusion_ensemble")
    assert len(policy.members) == 2 and all(m.frame_encoder is None for m in policy.members)
    assert set(policy.obs_shapes) == {"state", "images/front", "images/wrist"}
