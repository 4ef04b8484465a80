"""EpisodeRecorder: one layout of recorded steps for every producer."""

import numpy as np
import pytest

from robot_learn.data import EpisodeRecorder, EpisodeStore


def test_recorder_lays_out_rows_and_commits_one_episode(tmp_path):
    rec = EpisodeRecorder(("state",))
    for t in range(3):
        obs = {"state": np.full(4, t, np.float32), "ignored": 1.0,
               "images": {"front": np.full((8, 8, 3), t, np.uint8)}}
        rec.record(obs, np.full(2, t, np.float32), intervention=t == 1, reward=0.5, phase=t)
        obs["state"][:] = 99  # the recorder owns copies
    store = EpisodeStore.create(tmp_path / "s.zarr")
    index = rec.commit(store, {"task": "stack", "instruction": "", "success": True, "seed": 0, "source": "teleop"})
    steps = store.episode(index)["steps"]
    assert sorted(steps) == ["action", "images/front", "intervention", "phase", "policy_action", "progress",
                             "reward", "state"]
    np.testing.assert_array_equal(steps["state"][:, 0], [0, 1, 2])
    np.testing.assert_array_equal(steps["policy_action"], steps["action"])  # nobody else proposed
    np.testing.assert_array_equal(steps["intervention"], [False, True, False])
    assert steps["images/front"].dtype == np.uint8 and len(rec) == 0


def test_an_empty_recorder_commits_nothing(tmp_path):
    with pytest.raises(ValueError, match="the recorder holds no steps"):
        EpisodeRecorder(("state",)).steps()
