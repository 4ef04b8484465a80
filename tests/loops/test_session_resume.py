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
