"""``robot-learn improve loop=grpo``: GRPO rounds of a pixel discrete-diffusion VLA, with its
groups imagined by a world model or rolled out in MuJoCo, then evaluated in MuJoCo.
Tiny sizes, real MuJoCo and zarr, an untrained world model."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest
from tests.cli.conftest import _command
import torch

from robot_learn.data import EpisodeStore
from robot_learn.policies import load_policy
from robot_learn.world_models import VideoWorldModel, WorldModelConfig

# A tiny VLA reading the front camera at 64 px: what the world model below imagines.
VLA = ["task=bin_place", "policy=discrete_diffusion_pixels", "policy.image_size=64", "policy.frame_encoder.cameras=[front]",
       "+policy.frame_encoder.image_size=64", "policy.frame_pretraining.resets=24",
       "policy.frame_pretraining.expert_episodes=1", "policy.frame_pretraining.steps=3",
       "+policy.frame_pretraining.batch_size=8", "policy.hidden_dim=32", "policy.num_layers=1", "policy.num_bins=32",
       "policy.decoding_rounds=2", "policy.execute_horizon=4", "train=fast", "base_train_steps=4",
       "loop.eval_episodes=2", "task.demos=2", "task.max_steps=12", "loop.groups=2", "loop.group_size=2",
       "loop.iterations=1", "base_eval=false"]


@pytest.fixture(scope="module")
def grpo_run(tmp_path_factory, run_cli_in):
    """A base VLA trained on 2 demos, then one GRPO round in an untrained world model."""
    from robot_learn.envs.demos import collect_demos

    tmp = tmp_path_factory.mktemp("improve_grpo")
    starts = tmp / "data/bin_place_demos_front_64.zarr"
    collect_demos("bin_place", 2, starts, cameras=("front",), image_size=64, progress_bar=False)
    torch.manual_seed(0)
    VideoWorldModel(WorldModelConfig(image_size=64, block_out_channels=(16, 32), state_hidden=32)).save(tmp / "wm")
    out = run_cli_in(tmp, "improve", "loop=grpo", "rounds=1", *VLA, f"loop.world_model={tmp / 'wm'}",
                     f"loop.starts={starts}", timeout=600)
    return tmp, out


def test_grpo_round_imagines_groups_updates_the_vla_and_evaluates_in_mujoco(grpo_run):
    tmp, out = grpo_run
    assert out.returncode == 0, out.stderr[-3000:]
    assert "grpo iteration 1/1: 4 rollouts" in out.stdout
    run = tmp / "outputs/improve/bin_place_grpo"
    with EpisodeStore.open(run / "round_01/rollouts.zarr", mode="r") as rollouts:
        assert rollouts.num_episodes == 4 and set(rollouts.meta["source"]) == {"synthetic"}
        assert rollouts.read("images/front").shape[1:] == (64, 64, 3)
    round_1 = json.loads((run / "rounds.json").read_text())[-1]
    assert round_1["round"] == 1 and round_1["eval_episodes"] == 2  # evaluated in MuJoCo
    assert round_1["data_added"] == {"synthetic": 4} and round_1["grpo"][0]["rollouts"] == 4
    policy = load_policy(round_1["policy_dir"])
    assert set(policy.obs_shapes) == {"state", "images/front"}  # deploys from camera and joints


def test_grpo_groups_roll_out_in_mujoco_with_sources_autonomous(grpo_run, run_cli_in):
    tmp, out = grpo_run
    assert out.returncode == 0, out.stderr[-3000:]
    base = next((tmp / "outputs/improve/bin_place_grpo/base").rglob("model.safetensors")).parent
    out = run_cli_in(tmp, "improve", "loop=grpo", "rounds=1", *VLA, "loop.sources=[autonomous]", f"base_policy={base}",
                     "run_dir=outputs/improve/grpo_sim", timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    with EpisodeStore.open(tmp / "outputs/improve/grpo_sim/round_01/rollouts.zarr", mode="r") as rollouts:
        assert rollouts.num_episodes == 4 and set(rollouts.meta["source"]) == {"rollout"}
        assert sorted(set(int(s) for s in rollouts.meta["seed"])) == [100000, 100001]  # two starts (reset seeds), a group of 2 each


def test_a_grpo_round_killed_mid_round_resumes_after_its_last_finished_iteration(grpo_run, run_cli_in):
    """SIGKILL once the first iteration's checkpoint is written; the rerun goes on from there
    (exact weights: tests/loops/test_grpo_progress.py) and the store holds each rollout once."""
    tmp, out = grpo_run
    assert out.returncode == 0, out.stderr[-3000:]
    base = next((tmp / "outputs/improve/bin_place_grpo/base").rglob("model.safetensors")).parent
    args = ["improve", "loop=grpo", "rounds=1", *VLA, "loop.iterations=3", f"loop.world_model={tmp / 'wm'}",
            f"loop.starts={tmp / 'data/bin_place_demos_front_64.zarr'}", f"base_policy={base}",
            "run_dir=outputs/improve/grpo_killed"]
    round_dir = tmp / "outputs/improve/grpo_killed/round_01"
    latest = round_dir / "grpo_progress/checkpoints/latest"

    def finished_and_written():
        """(iterations checkpointed, episodes in the store) as the files say now."""
        try:
            done = int(latest.read_text().strip().removeprefix("step_"))
            written = json.loads((round_dir / "rollouts.zarr/episode_store.json").read_text())["num_episodes"]
        except (OSError, ValueError, KeyError):
            return 0, 0
        return done, written

    with open(tmp / "killed.err", "w") as err:
        proc = subprocess.Popen([*_command(), *args], cwd=tmp, stdout=subprocess.DEVNULL, stderr=err,
                                env={**os.environ, "MUJOCO_GL": "egl", "OMP_NUM_THREADS": "1"})
        try:
            # Killed inside an iteration after at least one of its groups was written (4 rollouts
            # an iteration), so the rerun has to cut the store back.
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline and proc.poll() is None:
                done, written = finished_and_written()
                if done >= 1 and written > 4 * done:
                    break
                time.sleep(0.01)
            assert proc.poll() is None, f"the round ended before it was killed: {(tmp / 'killed.err').read_text()[-2000:]}"
            proc.send_signal(signal.SIGKILL)
        finally:
            proc.kill()
            proc.wait()
    done, written = finished_and_written()
    assert 1 <= done < 3 and written > 4 * done, (done, written)
    assert not (round_dir / "report.json").exists()

    again = run_cli_in(tmp, *args, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "round 1: resuming after GRPO iteration" in again.stdout and "grpo iteration 1/3" not in again.stdout
    assert "grpo iteration 3/3" in again.stdout
    with EpisodeStore.open(round_dir / "rollouts.zarr", mode="r") as rollouts:
        assert rollouts.num_episodes == 12  # 3 iterations x 2 groups x 2 rollouts, none twice
    assert len(json.loads((round_dir / "grpo.json").read_text())) == 3
    assert not (round_dir / "grpo_progress").exists()  # removed once the round is evaluated


@pytest.mark.parametrize("args, message", [
    ([], "loop=grpo with sources=[imagined] needs loop.world_model"),
    (["loop.world_model=nowhere"], "loop.world_model 'nowhere' does not exist"),
    (["loop.sources=[hitl]"], "sources must be one of [imagined], [autonomous], got ['hitl']"),
    (["loop.sources=[autonomous]", "loop.group_size=1"], "grpo group_size must be >= 2"),
    (["loop.sources=[autonomous]", "+loop.train_lr=1e-3"], "loop=grpo updates the policy at loop.lr (0.0001); "
     "loop.train_lr is for the loops that fine-tune on collected data, got 0.001"),
])
def test_grpo_loop_settings_are_one_line_errors(user_error, tmp_path, args, message):
    assert message in user_error("improve", "loop=grpo", "rounds=1", "base_eval=false", *args)
