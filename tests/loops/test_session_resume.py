"""A HITL session resumes only its own policy's episodes of a round, and never records
an empty run."""

import os
import sys

import pytest
import torch

from robot_learn.data import EpisodeStore
from robot_learn.envs import SimRobot
from robot_learn.loops import HITLSession

sys.path.insert(0, os.path.dirname(__file__))
from session_fixtures import HoldPolicy  # noqa: E402

torch.set_num_threads(1)
STEPS = 6


@pytest.fixture
def robot():
    r = SimRobot("stack", cameras=(), max_steps=STEPS)
    r.connect()
    yield r
    r.disconnect()


def _session(robot, store, policy_id, round_index=0):
    return HITLSession(robot, HoldPolicy(), None, store, "stack", max_steps=STEPS, round_index=round_index,
                       policy_id=policy_id)


def test_rerunning_the_same_policy_resumes_after_its_committed_episodes(robot, tmp_path):
    store = EpisodeStore.create(tmp_path / "s.zarr")
    assert len(_session(robot, store, "policy_a").run(2, seed=0)) == 2
    done = _session(robot, store, "policy_a").run(3, seed=0)
    assert [d.seed for d in done] == [2] and store.num_episodes == 3


def test_another_policy_in_the_same_round_is_refused_instead_of_running_zero_episodes(robot, tmp_path):
    store = EpisodeStore.create(tmp_path / "s.zarr")
    _session(robot, store, "policy_a").run(2, seed=0)
    with pytest.raises(ValueError, match=r"already holds round 0 'stack' episodes of another policy \('policy_a'\), "
                                         r"not of this session's policy 'policy_b'; give this policy its own round"):
        _session(robot, store, "policy_b").run(2, seed=0)
    assert store.num_episodes == 2
    # Its own round is fine.
    assert len(_session(robot, store, "policy_b", round_index=1).run(1, seed=0)) == 1


def test_zero_episodes_is_refused(robot, tmp_path):
    store = EpisodeStore.create(tmp_path / "s.zarr")
    with pytest.raises(ValueError, match="episodes must be >= 1, got 0"):
        _session(robot, store, "policy_a").run(0)


def test_sessions_of_different_operators_in_one_round_resume_separately(robot, tmp_path):
    from robot_learn.loops.operators import KeyboardOperator, ReplaySource

    store = EpisodeStore.create(tmp_path / "s.zarr")
    _session(robot, store, "policy_a").run(1, seed=0)  # the autonomous source: no operator
    operated = HITLSession(robot, HoldPolicy(), KeyboardOperator(ReplaySource([])), store, "stack", max_steps=STEPS,
                           policy_id="policy_a")
    assert operated.committed() == 0 and len(operated.run(2, seed=10)) == 2
    assert _session(robot, store, "policy_a").committed() == 1 and store.num_episodes == 3


def test_a_policy_needing_a_key_the_robot_lacks_is_refused_before_any_step(robot, tmp_path):
    from robot_learn.loops import PolicyActor
    from robot_learn.policies import DiffusionConfig, make_policy

    config = DiffusionConfig(state_dims={"state": 10, "gripper_force": 1}, state_hidden_dims=[8], state_feature_dim=8,
                             down_dims=[8, 16], timestep_embed_dim=8, unet_groups=4, num_inference_steps=2)
    store = EpisodeStore.create(tmp_path / "s.zarr")
    with pytest.raises(ValueError, match=r"the policy needs observation 'gripper_force' but robot SimRobot provides "
                                         r"only env_state, objects, state"):
        HITLSession(robot, PolicyActor(make_policy("diffusion", config)), None, store, "stack")
    assert store.num_episodes == 0
