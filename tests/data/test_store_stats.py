"""Normalisation statistics and the finite check."""

from __future__ import annotations

import numpy as np
import pytest
import zarr

from episode_builders import make_meta, make_steps
from robot_learn.data import EpisodeStore, StoreError

LENGTHS = (5, 7, 3, 6)


def all_frames(key, seeds_lengths):
    return np.concatenate([make_steps(n, s)[key] for s, n in seeds_lengths])


@pytest.mark.parametrize("key", ["state", "action", "reward"])
def test_stats_match_numpy_per_feature_dim(small_store, key):
    x = all_frames(key, enumerate(LENGTHS)).astype(np.float64)
    stats = small_store.stats([key])[key]
    expected = {"min": x.min(0), "max": x.max(0), "mean": x.mean(0), "std": x.std(0),
                "q01": np.quantile(x, 0.01, axis=0), "q99": np.quantile(x, 0.99, axis=0)}
    for name, want in expected.items():
        assert stats[name].dtype == np.float32 and stats[name].shape == want.shape
        np.testing.assert_allclose(stats[name], want, rtol=1e-6, atol=1e-7, err_msg=name)


def test_stats_are_saved_in_the_store_and_read_back(small_store, store_path):
    first = small_store.stats(["state", "action"])
    attrs = zarr.open_group(store=str(store_path), mode="r")["stats"].attrs
    assert attrs["state"]["num_frames"] == 21
    reopened = EpisodeStore.open(store_path)
    again = reopened.stats(["state", "action"])
    for key in first:
        for name in first[key]:
            np.testing.assert_array_equal(again[key][name], first[key][name])


def test_stats_are_recomputed_after_an_append(small_store, store_path):
    before = small_store.stats(["state"])["state"]
    steps = make_steps(4, 50)
    steps["state"] += 100.0
    small_store.append_episode(steps, make_meta(4))
    after = EpisodeStore.open(store_path, mode="a").stats(["state"])["state"]
    np.testing.assert_allclose(after["max"], np.maximum(before["max"], steps["state"].max(0)))
    assert zarr.open_group(store=str(store_path), mode="r")["stats"].attrs["state"]["num_frames"] == 25


def test_check_finite_names_field_episode_step_and_dim(small_store):
    small_store.check_finite()  # clean store passes
    steps = make_steps(6, 10)
    steps["action"][4, 3] = np.nan
    small_store.append_episode(steps, make_meta(4))
    with pytest.raises(StoreError, match=r"non-finite value nan in 'action' at episode 4, "
                                         r"step 4 \(frame 25, dim 3\)"):
        small_store.check_finite()
    small_store.check_finite(keys=["state"])  # other keys stay clean


def test_check_finite_finds_inf_in_scalar_field(small_store):
    steps = make_steps(3, 10)
    steps["reward"][0] = -np.inf
    small_store.append_episode(steps, make_meta(4))
    with pytest.raises(StoreError, match=r"-inf in 'reward' at episode 4, step 0 \(frame 21\)"):
        small_store.check_finite(["reward", "state"])


def test_stats_of_an_unknown_key_are_refused(small_store):
    with pytest.raises(StoreError, match="unknown key 'stat'"):
        small_store.stats(["stat"])


def test_stats_refuse_non_finite_data_and_name_where_it_is(small_store):
    steps = make_steps(3, 10)
    steps["state"][2, 0] = np.nan
    small_store.append_episode(steps, make_meta(4))
    with pytest.raises(StoreError, match=r"nan in 'state' at episode 4, step 2"):
        small_store.stats(["state"])
    with pytest.raises(StoreError, match="NaN or Inf"):
        small_store.view(task="stack").stats(["state"])


def test_view_stats_cover_only_the_view(small_store):
    x = np.concatenate([make_steps(n, s)["action"] for s, n in ((0, 5), (2, 3))]).astype(np.float64)
    stats = small_store.view(success=True).stats(["action"])["action"]
    np.testing.assert_allclose(stats["mean"], x.mean(0), rtol=1e-6)
    np.testing.assert_allclose(stats["q99"], np.quantile(x, 0.99, axis=0), rtol=1e-6)
