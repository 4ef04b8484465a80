"""``robot-learn hitl steer=... steer_sampler=...``: a steered session on the MuJoCo twin, and
one-line errors that create no store for every bad steering input."""

import json

import numpy as np
import pytest

from robot_learn.cli.hitl import quote_steer
from robot_learn.data import EpisodeStore

WORKSPACE = ("x in [-0.1, 0.4], y in [-0.35, 0.35], z in [0.005, 0.3] m, and 0.08 <= hypot(x, y) <= 0.31 m "
             "from the arm's base")


def save_policy(directory, action_dim=5):
    """A random-weight state policy for the twin's ``state`` and ``env_state``, pose-range actions."""
    import torch

    from robot_learn.policies import DiffusionConfig, make_policy

    torch.manual_seed(0)
    low = np.resize(np.array([-0.1, -0.35, 0.0, -np.pi, 0.0], np.float32), action_dim)
    high = np.resize(np.array([0.4, 0.35, 0.35, np.pi, 1.0], np.float32), action_dim)
    stats = {"action": {"min": low, "max": high},
             **{k: {"min": -np.ones(d, np.float32), "max": np.ones(d, np.float32)}
                for k, d in (("state", 10), ("env_state", 14))}}
    config = DiffusionConfig(action_dim=action_dim, state_dims={"state": 10, "env_state": 14}, action_horizon=8,
                             execute_horizon=4, state_hidden_dims=[16], state_feature_dim=16, down_dims=[16, 32],
                             timestep_embed_dim=16, num_inference_steps=4)
    make_policy("diffusion", config, stats).save(directory)
    return directory


def test_commas_in_a_steer_value_reach_hydra_as_one_string():
    assert quote_steer(["steer=point:0.2,0.1,0.05", "episodes=1"]) == ["steer='point:0.2,0.1,0.05'", "episodes=1"]
    assert quote_steer(["steer='point:0.2,0.1,0.05'", "steer=null", "steer_sampler=guided"]) == \
        ["steer='point:0.2,0.1,0.05'", "steer=null", "steer_sampler=guided"]


def test_a_steered_session_records_its_episode_and_says_how_it_was_steered(run_cli, tmp_path):
    save_policy(tmp_path / "policy")
    out = run_cli("hitl", "policy_dir=policy", "operator=simulated", "episodes=1", "task.max_steps=6", "run_dir=run",
                  "steer=point:0.2,-0.05,0.08", "steer_sampler=guided", timeout=240)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "steered point:0.2,-0.05,0.08 (guided)" in out.stdout
    assert EpisodeStore.open(tmp_path / "run/hitl.zarr").num_episodes == 1
    log = [json.loads(line) for line in (tmp_path / "run/hitl.sessions.jsonl").read_text().splitlines()]
    assert log[0]["steering"] == "point:0.2,-0.05,0.08 (guided)"


@pytest.mark.parametrize(("overrides", "message"), [
    (("steer=point:0.9,0,0.1",), f"steering point (0.9, 0, 0.1) is outside robot SimRobot's workspace: {WORKSPACE}"),
    (("steer=sketch:0.2,0,0.1/0.3,0.3,0.1",), "steering point (0.3, 0.3, 0.1) is outside robot SimRobot's workspace"),
    (("steer=pt:0.2,0,0.1",), "malformed steer 'pt:0.2,0,0.1': expected point:x,y,z, sketch:x,y,z/x,y,z/... or "
                              "correction:<action>/<action>/... (steering kinds: point, sketch, correction)"),
    (("steer=point:0.2,0",), "malformed steer 'point:0.2,0': each point is 3 numbers x,y,z; got 2"),
    (("steer=point:0.2,0,0.1", "steer_sampler=mcmc"),
     "unknown steer_sampler 'mcmc'; valid choices: random, post_hoc, biased_init, guided, stochastic"),
    (("steer=5",), "malformed steer '5'"),
])
def test_bad_steering_is_one_line_and_creates_no_store(user_error, tmp_path, overrides, message):
    save_policy(tmp_path / "policy")
    line = user_error("hitl", "policy_dir=policy", "run_dir=run", *overrides)
    assert message in line
    assert not (tmp_path / "run" / "hitl.zarr").exists()


def test_steering_a_policy_of_another_action_width_names_both(user_error, tmp_path):
    save_policy(tmp_path / "policy", action_dim=6)
    line = user_error("hitl", "policy_dir=policy", "run_dir=run", "steer=point:0.2,0,0.1")
    assert "the guidance objective reads 5-dim actions but the policy acts in 6 dims" in line
    assert not (tmp_path / "run" / "hitl.zarr").exists()
