"""EpisodeStore: layout on disk, exact round trips, reopening and appending."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest
import zarr

from episode_builders import make_meta, make_steps
from robot_learn.data import EpisodeStore, StoreError


def test_steps_and_meta_round_trip_exactly_after_reopening(store_path):
    store = EpisodeStore.create(store_path)
    episodes = [make_steps(length, seed=i, cameras=("front", "wrist"), image_size=12)
                for i, length in enumerate((9, 1, 14))]
    metas = [make_meta(i, source=src, round=r, policy_id=f"p{i}", operator="ana")
             for i, (src, r) in enumerate((("demo", 0), ("rollout", 1), ("teleop", 2)))]
    for i, (steps, meta) in enumerate(zip(episodes, metas)):
        assert store.append_episode(steps, meta) == i

    reopened = EpisodeStore.open(store_path)
    assert reopened.num_episodes == 3 and reopened.num_frames == 24
    assert reopened.episode_ends.tolist() == [9, 10, 24]
    assert set(reopened.keys) == set(episodes[0])
    for i, (steps, meta) in enumerate(zip(episodes, metas)):
        ep = reopened.episode(i)
        assert set(ep["steps"]) == set(steps)
        for key, values in steps.items():
            np.testing.assert_array_equal(ep["steps"][key], values)
            assert ep["steps"][key].dtype == values.dtype
        for field, value in meta.items():
            assert ep["meta"][field] == value
        assert type(ep["meta"]["success"]) is bool and type(ep["meta"]["seed"]) is int
    assert reopened.meta["source"].tolist() == ["demo", "rollout", "teleop"]
    assert reopened.meta["round"].tolist() == [0, 1, 2]


def test_layout_is_plain_zarr_with_data_and_meta_arrays(small_store, store_path):
    root = zarr.open_group(store=str(store_path), mode="r")
    assert root["data/images/front"].shape == (21, 8, 8, 3)
    assert root["data/state"].shape == (21, 10)
    assert root["meta/episode_ends"][:].tolist() == [5, 12, 15, 21]
    assert root["meta/episode_ends"].dtype == np.int64
    for field in ("task", "instruction", "success", "seed", "source", "round",
                  "policy_id", "operator", "created"):
        assert root[f"meta/{field}"].shape == (4,)
    # Images are compressed and chunked by a few frames; low-dim arrays by many.
    assert root["data/images/front"].chunks[0] <= 8
    assert root["data/images/front"].compressors
    assert root["data/state"].chunks[0] >= 256


def test_meta_defaults_and_created_timestamp_are_filled_in(store_path):
    store = EpisodeStore.create(store_path)
    before = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    store.append_episode(make_steps(3, 0), make_meta(0))
    meta = store.episode(0)["meta"]
    assert (meta["round"], meta["policy_id"], meta["operator"]) == (0, "", "")
    created = dt.datetime.fromisoformat(meta["created"])
    assert before <= created <= dt.datetime.now(dt.timezone.utc)


def test_float64_and_int32_inputs_are_stored_as_canonical_dtypes(store_path):
    store = EpisodeStore.create(store_path)
    steps = make_steps(4, 0)
    steps["action"] = steps["action"].astype(np.float64)
    steps["phase"] = steps["phase"].astype(np.int32)
    store.append_episode(steps, make_meta(0))
    assert store.schema["action"]["dtype"] == "float32"
    assert store.schema["phase"]["dtype"] == "int64"
    np.testing.assert_array_equal(store.episode(0)["steps"]["action"],
                                  steps["action"].astype(np.float32))


def test_store_reopened_for_append_continues_after_last_episode(small_store, store_path):
    store = EpisodeStore.open(store_path, mode="a")
    extra = make_steps(4, seed=99)
    assert store.append_episode(extra, make_meta(4)) == 4
    again = EpisodeStore.open(store_path)
    assert again.num_frames == 25
    np.testing.assert_array_equal(again.episode(4)["steps"]["state"], extra["state"])
    np.testing.assert_array_equal(again.episode(3)["steps"]["state"], make_steps(6, 3)["state"])


def test_reader_sees_new_episodes_after_refresh(small_store, store_path):
    reader = EpisodeStore.open(store_path)
    small_store.append_episode(make_steps(2, 50), make_meta(4))
    assert reader.num_episodes == 4
    reader.refresh()
    assert reader.num_episodes == 5
    np.testing.assert_array_equal(reader.episode(-1)["steps"]["action"], make_steps(2, 50)["action"])


def test_episode_index_out_of_range_names_the_count(small_store):
    with pytest.raises(StoreError, match="episode index 4 out of range; store has 4 episodes"):
        small_store.episode(4)


def test_state_only_store_has_no_image_arrays(store_path):
    store = EpisodeStore.create(store_path)
    steps = {k: v for k, v in make_steps(5, 0).items() if not k.startswith("images/")}
    store.append_episode(steps, make_meta(0))
    assert not any(k.startswith("images/") for k in store.keys)
    assert EpisodeStore.open(store_path).episode(0)["steps"].keys() == steps.keys()


def test_data_package_imports_no_other_robot_learn_package_or_torch():
    import subprocess
    import sys
    code = ("import sys, robot_learn.data; "
            "bad = [m for m in sys.modules if m.startswith('robot_learn.') "
            "and not m.startswith('robot_learn.data')] + "
            "[m for m in ('torch', 'mujoco', 'gymnasium') if m in sys.modules]; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
