"""``robot-learn improve`` with a pixel preset (cameras through a frozen frame encoder), and
``loop=world_model``: rounds whose episodes are imagined by a world model and judged by its
scorer, then fine-tuned on and evaluated in MuJoCo. Tiny sizes, real MuJoCo and zarr."""

from __future__ import annotations

import json

import pytest
import torch

from robot_learn.data import EpisodeStore
from robot_learn.policies import load_policy
from robot_learn.world_models import VideoWorldModel, WorldModelConfig

# The front camera at 64 px: what the world model below imagines.
PIXELS = ["task=bin_place", "policy=diffusion_pixels", "policy.image_size=64", "policy.frame_encoder.cameras=[front]",
          "+policy.frame_encoder.image_size=64", "policy.frame_pretraining.resets=24",
          "policy.frame_pretraining.expert_episodes=1", "policy.frame_pretraining.steps=3",
          "policy.frame_pretraining.batch_size=8", "+policy.down_dims=[16,32]", "+policy.action_horizon=8",
          "+policy.execute_horizon=4", "policy.num_inference_steps=2", "train=fast", "base_train_steps=4",
          "loop.episodes=2", "loop.train_steps=4", "loop.eval_episodes=2", "task.demos=2", "task.max_steps=12"]


@pytest.fixture(scope="module")
def hgdagger_run(tmp_path_factory, run_cli_in):
    """One HG-DAgger round of a pixel policy: base trained on 2 demos, 2 episodes in MuJoCo with
    the simulated operator taking over.
    The demos are recorded first at the task's full length; the rounds run 12-step episodes."""
    from robot_learn.envs.demos import collect_demos

    tmp = tmp_path_factory.mktemp("improve_pixels")
    collect_demos("bin_place", 2, tmp / "data/bin_place_demos_front_64.zarr", cameras=("front",), image_size=64,
                  progress_bar=False)
    out = run_cli_in(tmp, "improve", "loop=hgdagger", "rounds=1", *PIXELS, "train.lr=1e-3", timeout=600)
    return tmp, out


def test_a_pixel_policy_trains_on_an_operators_corrections_through_its_frame_encoder(hgdagger_run):
    tmp, out = hgdagger_run
    assert out.returncode == 0, out.stderr[-3000:]
    # Continued, a pixel policy fine-tunes at its frame_pretraining.finetune_lr, not train.lr (1e-3 here).
    assert "round 1: continue training, 4 steps at lr 0.0001" in out.stdout
    run = tmp / "outputs/improve/bin_place_hgdagger"
    collected = EpisodeStore.open(run / "collected.zarr", mode="r")
    assert collected.num_episodes == 2 and "images/front" in collected.keys  # the robot rendered its camera
    assert collected.view().read("intervention").any()
    # The round trained on the encoder's features of the corrected segments, cached beside them.
    assert (run / "round_01" / "train.zarr" / "derived" / "features").is_dir()
    rounds = json.loads((run / "rounds.json").read_text())
    assert [r["round"] for r in rounds] == [0, 1] and rounds[1]["eval_episodes"] == 2
    policy = load_policy(rounds[1]["policy_dir"])
    assert set(policy.obs_shapes) == {"state", "images/front"}  # deploys from camera and joints


def test_world_model_loop_fine_tunes_on_imagined_successes_and_evaluates_in_mujoco(hgdagger_run, run_cli_in):
    tmp, out = hgdagger_run
    assert out.returncode == 0, out.stderr[-3000:]
    base = json.loads((tmp / "outputs/improve/bin_place_hgdagger/rounds.json").read_text())[0]["policy_dir"]
    torch.manual_seed(0)
    VideoWorldModel(WorldModelConfig(image_size=64, block_out_channels=(16, 32), state_hidden=32)).save(tmp / "wm")
    starts = tmp / "data/bin_place_demos_front_64.zarr"
    args = ("improve", "loop=world_model", "rounds=1", *PIXELS, f"base_policy={base}", f"loop.world_model={tmp / 'wm'}",
            f"loop.starts={starts}", "loop.episodes=3", "base_eval=false", "loop.train_lr=3e-4")
    out = run_cli_in(tmp, *args, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "round 1: continue training, 4 steps at lr 0.0003" in out.stdout  # loop.train_lr wins
    assert "3 episodes from imagined 1" in out.stdout and "round 1: 3 imagined rollouts" in out.stdout
    run = tmp / "outputs/improve/bin_place_world_model"
    with EpisodeStore.open(run / "collected.zarr", mode="r") as collected:
        assert collected.num_episodes == 3 and set(collected.meta["source"]) == {"synthetic"}
        assert sorted(int(s) for s in collected.meta["seed"]) == [101000, 101001, 101002]
        assert collected.read("images/front").shape[1:] == (64, 64, 3)
    round_1 = json.loads((run / "rounds.json").read_text())[-1]
    assert round_1["round"] == 1 and round_1["eval_episodes"] == 2  # evaluated in MuJoCo
    assert round_1["data_added"] == {"synthetic": 3}
    # A killed round resumes after its imagined episodes: none are imagined twice.
    (run / "round_01/report.json").unlink()
    again = run_cli_in(tmp, *args, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    with EpisodeStore.open(run / "collected.zarr", mode="r") as collected:
        assert collected.num_episodes == 3


@pytest.mark.parametrize("args, message", [
    ([], "missing required setting loop.world_model; give loop.world_model=..."),
    (["loop.world_model=nowhere"], "loop.world_model 'nowhere' does not exist"),
    (["loop.world_model=.", "loop.starts=missing.zarr"], "loop.starts 'missing.zarr' does not exist"),
    (["loop.world_model=.", "loop.starts=.", "loop.scorer=judge"],
     "loop.scorer 'judge' is neither 'nearest' nor a success-model directory"),
    (["loop.world_model=.", "loop.start=reset"], "loop.start 'reset' is not one of store, sim"),
])
def test_world_model_loop_settings_are_one_line_errors(user_error, tmp_path, args, message):
    assert message in user_error("improve", "loop=world_model", "rounds=1", "base_eval=false", *args)
