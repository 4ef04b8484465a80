"""`EpisodeStore.truncate`: a store cut back to its first episodes by one commit record,
nothing copied; later appends overwrite the dropped rows; saved statistics and derived
caches, which could match a later extent with other contents, are removed."""

from __future__ import annotations

import numpy as np
import pytest

from episode_builders import make_meta, make_steps
from robot_learn.data import EpisodeStore, StoreError
from robot_learn.data.feature_cache import load_or_build_feature_cache


def _store(path, lengths=(5, 7, 6)):
    store = EpisodeStore.create(path)
    for i, n in enumerate(lengths):
        store.append_episode(make_steps(n, seed=i), make_meta(i))
    return store


def test_truncate_keeps_the_first_episodes_and_appends_overwrite_the_rest(tmp_path):
    path = tmp_path / "s.zarr"
    with _store(path) as store:
        store.truncate(1)
        assert (store.num_episodes, store.num_frames) == (1, 5)
        assert store.meta["seed"].tolist() == [0]
        store.append_episode(make_steps(4, seed=9), make_meta(9))
    with EpisodeStore.open(path) as reader:
        assert (reader.num_episodes, reader.num_frames) == (2, 9)
        assert reader.episode_ends.tolist() == [5, 9]
        assert reader.meta["seed"].tolist() == [0, 9]
        for index, seed, length in ((0, 0, 5), (1, 9, 4)):
            steps = reader.episode(index)["steps"]
            expected = make_steps(length, seed=seed)
            for key in expected:
                assert np.array_equal(steps[key], expected[key]), key
        report = reader.verify()
        assert not report.problems, report.problems


def test_truncate_to_nothing_lets_another_schema_in(tmp_path):
    path = tmp_path / "s.zarr"
    with _store(path) as store:
        store.truncate(0)
        assert (store.num_episodes, store.num_frames, store.keys) == (0, 0, ())
        store.append_episode(make_steps(3, seed=4, cameras=("wrist",)), make_meta(4))
    with EpisodeStore.open(path) as reader:
        assert "images/wrist" in reader.keys and "images/front" not in reader.keys
        assert np.array_equal(reader.read("images/wrist"), make_steps(3, seed=4, cameras=("wrist",))["images/wrist"])


def test_saved_stats_and_feature_caches_do_not_outlive_a_truncation(tmp_path):
    """Episode 2 is replaced by one of the same length, so the extent (3 episodes, 18 frames)
    that the stats and the cache recorded comes back with other contents."""
    path = tmp_path / "s.zarr"
    with _store(path) as store:
        before = store.stats(["state"])["state"]["mean"]
        load_or_build_feature_cache(store, "features", "enc", ["front"],
                                    lambda images, _: images["front"].reshape(len(images["front"]), -1)[:, :2] * 1.0,
                                    log=lambda _: None)
        assert (path / "derived" / "features").exists()
        store.truncate(2)
        assert not (path / "derived").exists()
        store.append_episode(make_steps(6, seed=7), make_meta(7))
        after = store.stats(["state"])["state"]["mean"]
        assert not np.allclose(before, after)
        expected = np.concatenate([make_steps(n, seed=s)["state"] for n, s in ((5, 0), (7, 1), (6, 7))]).mean(0)
        assert np.allclose(after, expected, atol=1e-5)
    with EpisodeStore.open(path) as reader:
        assert np.allclose(reader.stats(["state"])["state"]["mean"], expected, atol=1e-5)


def test_another_store_object_of_the_process_sees_the_truncation_before_it_appends(tmp_path):
    path = tmp_path / "s.zarr"
    first = _store(path)
    second = EpisodeStore.open(path, mode="a")
    first.truncate(1)
    first.append_episode(make_steps(7, seed=8), make_meta(8))
    first.append_episode(make_steps(6, seed=9), make_meta(9))  # the extent is (3, 18) again
    second.append_episode(make_steps(2, seed=10), make_meta(10))
    assert second.meta["seed"].tolist() == [0, 8, 9, 10]  # re-read, though the extent matched its own
    with EpisodeStore.open(path) as reader:
        assert reader.meta["seed"].tolist() == [0, 8, 9, 10]
        assert reader.episode_ends.tolist() == [5, 12, 18, 20]
    first.close()
    second.close()


@pytest.mark.parametrize("bad", [4, -1, 1.5, True, "2"])
def test_a_bad_count_is_refused_naming_the_range_and_changes_nothing(tmp_path, bad):
    path = tmp_path / "s.zarr"
    with _store(path) as store:
        with pytest.raises(ValueError, match=r"from 0 to 3 .*got"):
            store.truncate(bad)
    with EpisodeStore.open(path) as reader:
        assert (reader.num_episodes, reader.num_frames) == (3, 18)


def test_a_read_only_store_cannot_be_truncated(tmp_path):
    path = tmp_path / "s.zarr"
    _store(path).close()
    with EpisodeStore.open(path) as reader, pytest.raises(StoreError, match="read-only; open it with mode='a'"):
        reader.truncate(1)


def test_plain_zarr_readers_see_the_cut_and_dropped_keys_are_gone_after_truncating_to_nothing(tmp_path):
    import zarr

    path = tmp_path / "s.zarr"
    with _store(path) as store:
        store.truncate(2)
        root = zarr.open_group(store=str(path), mode="r")
        assert root["data/state"].shape[0] == 12 and root["meta/episode_ends"].shape == (2,)
        store.truncate(0)
        with pytest.raises(StoreError, match="state"):
            store.array("state")


def test_a_stale_store_object_does_not_save_stats_of_the_dropped_episodes(tmp_path):
    """A second writer object of the process computes statistics after another truncated:
    it re-reads first, so it saves none for the old extent that a later append could match."""
    path = tmp_path / "s.zarr"
    first = _store(path)
    second = EpisodeStore.open(path, mode="a")
    first.truncate(2)
    kept = second.stats(["state"])["state"]["mean"]
    expected = np.concatenate([make_steps(n, seed=s)["state"] for n, s in ((5, 0), (7, 1))]).mean(0)
    assert np.allclose(kept, expected, atol=1e-5)
    first.close()
    second.close()
