"""Conditioning inputs a policy declares (RECAP's advantage, success conditioning)."""

import numpy as np
import pytest
import torch
from policy_fixtures import STATE_DIM, tiny_config

from robot_learn.policies import load_policy, make_policy
from robot_learn.policies.conditioning import with_condition_input


def obs(batch=2, steps=2):
    g = torch.Generator().manual_seed(1)
    return {"state": torch.rand(batch, steps, STATE_DIM, generator=g), "env_state": torch.rand(batch, steps, 4, generator=g)}


def chunk(policy, o):
    return policy.predict_action_chunk(o, generator=torch.Generator().manual_seed(0))


def test_widened_policy_starts_out_computing_what_the_base_did(windows, stats):
    base = make_policy("diffusion", tiny_config(), stats).eval()
    widened = with_condition_input(base, "advantage").eval()
    o = obs()
    for value in (1.0, -1.0, 0.0):
        torch.testing.assert_close(chunk(widened, {**o, "advantage": torch.full((2, 2, 1), value)}), chunk(base, o))


def test_condition_is_declared_not_observed_and_select_action_fills_the_deployed_value(stats, tmp_path):
    policy = with_condition_input(make_policy("diffusion", tiny_config(), stats), "advantage", deployed=1.0).eval()
    assert policy.conditions == {"advantage": 1.0}
    assert "advantage" not in policy.obs_shapes and "advantage" not in policy.training_obs_keys
    with torch.no_grad():  # make the condition matter
        policy.obs_encoder.state_encoder.mlp[0].weight[:, -1] = 1.0
    o = {k: v[:, 0].numpy() for k, v in obs().items()}
    action = policy.select_action(o, generator=torch.Generator().manual_seed(0))
    policy.reset()
    explicit = policy.select_action({**o, "advantage": np.ones((2, 1), np.float32)},
                                    generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(action, explicit)
    policy.save(tmp_path / "p")
    assert load_policy(tmp_path / "p").conditions == {"advantage": 1.0}


def test_a_condition_must_be_a_new_low_dim_input(stats):
    policy = make_policy("diffusion", tiny_config(), stats)
    with pytest.raises(ValueError, match="'state' is already an observation of this policy"):
        with_condition_input(policy, "state")
    with pytest.raises(ValueError, match=r"conditions \['x'\] are not low-dim inputs; state_dims: state, env_state"):
        tiny_config(conditions={"x": 1.0})
