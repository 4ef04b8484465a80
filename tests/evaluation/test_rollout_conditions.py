"""evaluate() under EnvConditions: disturbances are counted per episode and in the report."""

import json

import torch

from robot_learn.envs.conditions import EnvConditions
from robot_learn.envs.disturbances import Disturbances
from robot_learn.evaluation import evaluate, write_report
from robot_learn.policies import diffusion_state_config, make_policy


def test_disturbances_are_counted_per_episode_and_reported(tmp_path, one_torch_thread):
    config = diffusion_state_config(down_dims=[16, 32], action_horizon=8, execute_horizon=4, num_inference_steps=2,
                                    state_hidden_dims=[32], state_feature_dim=16, timestep_embed_dim=16)
    torch.manual_seed(0)
    policy = make_policy("diffusion", config, stats=None)
    # An untrained policy stays away from the cube early on, so every drawn nudge lands;
    # it never carries the cube, so no slip does.
    conditions = EnvConditions("narrow", Disturbances({"nudge": 1.0, "slip": 1.0}, nudge_steps=(1, 1)))
    result = evaluate(policy, "stack", episodes=3, workers=2, videos=0, max_steps=5, vectorization="sync",
                      conditions=conditions)
    assert [e.disturbances for e in result.episodes] == [{"nudge": 1, "slip": 0}] * 3
    assert result.disturbance_counts() == {"nudge": {"episodes": 3, "successes": 0},
                                           "slip": {"episodes": 0, "successes": 0}}
    assert result.info["conditions"] == "narrow + nudge, slip"
    paths = write_report(result, tmp_path)
    report = json.loads(paths["json"].read_text())
    assert report["tasks"]["stack"]["disturbances"]["nudge"] == {"episodes": 3, "successes": 0}
    assert ("stack ran under narrow + nudge, slip: nudge in 3 episodes (0 succeeded); "
            "slip in 0 episodes (0 succeeded).") in paths["markdown"].read_text()
    # Without conditions nothing is counted and the report says nothing about them.
    plain = evaluate(policy, "stack", episodes=1, workers=1, videos=0, max_steps=2)
    assert plain.episodes[0].disturbances == {} and "disturbances" not in plain.to_dict()
