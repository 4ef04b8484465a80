"""Bad input to the episode store gets a StoreError that names what is wrong."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from episode_builders import make_meta, make_steps
from robot_learn.data import EpisodeStore, StoreError


def test_store_error_is_a_value_error():
    assert issubclass(StoreError, ValueError)


def test_opening_a_missing_path_says_it_does_not_exist(tmp_path):
    with pytest.raises(StoreError, match="does not exist"):
        EpisodeStore.open(tmp_path / "nowhere")


def test_opening_a_plain_directory_says_it_is_not_a_store(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(StoreError, match="is not an episode store"):
        EpisodeStore.open(tmp_path)


def test_opening_a_random_file_says_it_is_a_file(tmp_path):
    path = tmp_path / "random.bin"
    path.write_bytes(np.random.default_rng(0).bytes(100))
    with pytest.raises(StoreError, match="is a file, not an episode store"):
        EpisodeStore.open(path)


def test_opening_with_a_corrupt_commit_record_is_refused(small_store, store_path):
    (store_path / "episode_store.json").write_text("{not json")
    with pytest.raises(StoreError, match="unreadable commit record"):
        EpisodeStore.open(store_path)


def test_opening_with_an_unknown_mode_lists_valid_modes(small_store, store_path):
    with pytest.raises(StoreError, match="unknown mode 'w'; valid modes: r, a"):
        EpisodeStore.open(store_path, mode="w")


@pytest.mark.parametrize("array", ["data/state", "data/images/front", "meta/episode_ends",
                                   "meta/source"])
def test_opening_a_store_with_a_deleted_array_names_the_array(small_store, store_path, array):
    shutil.rmtree(store_path / array)
    with pytest.raises(StoreError, match=f"missing array '{array}'"):
        EpisodeStore.open(store_path)


def test_creating_over_an_existing_store_is_refused(small_store, store_path):
    with pytest.raises(StoreError, match="already an episode store"):
        EpisodeStore.create(store_path)
    assert EpisodeStore.open(store_path).num_episodes == 4  # left untouched


def test_creating_over_a_non_empty_directory_is_refused(tmp_path):
    (tmp_path / "keep.txt").write_text("x")
    with pytest.raises(StoreError, match="non-empty path"):
        EpisodeStore.create(tmp_path)


def test_appending_to_a_read_only_store_is_refused(small_store, store_path):
    store = EpisodeStore.open(store_path, mode="r")
    with pytest.raises(StoreError, match="read-only"):
        store.append_episode(make_steps(3, 0), make_meta(0))


def test_missing_key_is_named(small_store):
    steps = make_steps(3, 9)
    del steps["env_state"]
    with pytest.raises(StoreError, match=r"missing \['env_state'\], unexpected \[\]"):
        small_store.append_episode(steps, make_meta(9))


def test_extra_camera_is_named(small_store):
    steps = make_steps(3, 9, cameras=("front", "side"))
    with pytest.raises(StoreError, match=r"unexpected \['images/side'\]"):
        small_store.append_episode(steps, make_meta(9))


def test_shape_mismatch_names_key_expected_and_got(small_store):
    steps = make_steps(3, 9)
    steps["state"] = np.zeros((3, 7), np.float32)
    with pytest.raises(StoreError, match=r"'state': expected per-step shape \(10,\) dtype "
                                         r"float32, got shape \(7,\)"):
        small_store.append_episode(steps, make_meta(9))


def test_image_size_mismatch_names_key_expected_and_got(small_store):
    steps = make_steps(3, 9, image_size=16)
    with pytest.raises(StoreError, match=r"'images/front': expected per-step shape \(8, 8, 3\)"):
        small_store.append_episode(steps, make_meta(9))


def test_wrong_dtype_names_key_expected_and_got(small_store):
    steps = make_steps(3, 9)
    steps["images/front"] = steps["images/front"].astype(np.float32)
    with pytest.raises(StoreError, match="'images/front': expected dtype uint8.*got float32"):
        small_store.append_episode(steps, make_meta(9))
    steps = make_steps(3, 9)
    steps["intervention"] = steps["intervention"].astype(np.float32)
    with pytest.raises(StoreError, match="'intervention': expected dtype bool.*got float32"):
        small_store.append_episode(steps, make_meta(9))
    steps = make_steps(3, 9)
    steps["action"] = np.ones((3, 5), np.int64)
    with pytest.raises(StoreError, match="'action': expected dtype float32.*got int64"):
        small_store.append_episode(steps, make_meta(9))


def test_steps_of_different_lengths_are_refused_with_each_length(small_store):
    steps = make_steps(4, 9)
    steps["reward"] = steps["reward"][:3]
    with pytest.raises(StoreError, match="different lengths.*'reward': 3.*'state': 4"):
        small_store.append_episode(steps, make_meta(9))


def test_empty_episode_is_refused(store_path):
    store = EpisodeStore.create(store_path)
    with pytest.raises(StoreError, match="episode is empty"):
        store.append_episode(make_steps(0, 0), make_meta(0))
    with pytest.raises(StoreError, match="non-empty dict"):
        store.append_episode({}, make_meta(0))
    assert store.num_episodes == 0


def test_unknown_step_key_lists_valid_keys(store_path):
    store = EpisodeStore.create(store_path)
    steps = make_steps(3, 0)
    steps["imgaes/front"] = steps.pop("images/front")
    with pytest.raises(StoreError, match="unknown step key 'imgaes/front'; valid keys: state, "
                                         "env_state, objects, images/<camera>"):
        store.append_episode(steps, make_meta(0))


def test_unknown_source_lists_valid_sources(small_store):
    with pytest.raises(StoreError, match="unknown source 'demos'; valid sources: demo, rollout, "
                                         "intervention, reversed, guided, synthetic, teleop"):
        small_store.append_episode(make_steps(3, 9), make_meta(9, source="demos"))
    assert small_store.num_episodes == 4


def test_missing_and_unknown_meta_fields_are_named(small_store):
    meta = make_meta(9)
    del meta["seed"]
    with pytest.raises(StoreError, match="missing required field 'seed'"):
        small_store.append_episode(make_steps(3, 9), meta)
    with pytest.raises(StoreError, match=r"unknown meta fields \['sucess'\]"):
        small_store.append_episode(make_steps(3, 9), make_meta(9, sucess=True))
    with pytest.raises(StoreError, match="'success' must be a bool, got 'yes'"):
        small_store.append_episode(make_steps(3, 9), make_meta(9, success="yes"))


def test_rejected_episode_leaves_store_unchanged_and_appendable(small_store, store_path):
    steps = make_steps(3, 9)
    steps["state"] = np.zeros((3, 7), np.float32)
    with pytest.raises(StoreError):
        small_store.append_episode(steps, make_meta(9))
    assert small_store.append_episode(make_steps(3, 9), make_meta(9)) == 4
    assert EpisodeStore.open(store_path).num_frames == 24


def test_unknown_view_filter_and_source_are_named(small_store):
    with pytest.raises(StoreError, match=r"unknown filter \['sources'\]; valid filters: source, "
                                         "round, success, task"):
        small_store.view(sources="demo")
    with pytest.raises(StoreError, match="unknown source 'demoo'"):
        small_store.view(source=["demo", "demoo"])
