"""`export_lerobot` and the round trip store -> LeRobotDataset v3 -> store."""

from __future__ import annotations

import json

import numpy as np
from conftest import hitl_episodes
from lerobot.datasets.lerobot_dataset import LeRobotDataset

from robot_learn.data import EpisodeStore
from robot_learn.interop.lerobot_io import export_lerobot, import_lerobot

IMAGE_TOLERANCE = 8.0


def test_round_trip_keeps_steps_and_meta_exactly(hitl_store, tmp_path):
    export_lerobot(hitl_store, tmp_path / "lerobot")
    summary = import_lerobot(tmp_path / "lerobot", tmp_path / "back")
    back = EpisodeStore.open(tmp_path / "back")
    original = EpisodeStore.open(hitl_store)
    assert summary.episodes == original.num_episodes and summary.skipped == []
    assert back.keys == original.keys
    for index, (steps, meta) in enumerate(hitl_episodes()):
        episode = back.episode(index)
        for key, want in steps.items():
            got = episode["steps"][key]
            if key.startswith("images/"):
                assert got.shape == want.shape
                assert np.abs(got.astype(np.int16) - want).mean() < IMAGE_TOLERANCE
            else:
                assert got.dtype == original.episode(index)["steps"][key].dtype
                np.testing.assert_array_equal(got, want, err_msg=key)
        for field, value in meta.items():
            assert episode["meta"][field] == value, field
        assert episode["meta"]["created"] == original.episode(index)["meta"]["created"]


def test_round_trip_with_png_frames_keeps_images_exactly(hitl_store, tmp_path):
    export_lerobot(hitl_store, tmp_path / "lerobot", use_videos=False)
    import_lerobot(tmp_path / "lerobot", tmp_path / "back")
    back = EpisodeStore.open(tmp_path / "back")
    for index, (steps, _meta) in enumerate(hitl_episodes()):
        np.testing.assert_array_equal(back.episode(index)["steps"]["images/front"],
                                      steps["images/front"])


def test_export_writes_v3_with_hitl_fields_for_lerobot_users(hitl_store, tmp_path):
    summary = export_lerobot(hitl_store, tmp_path / "lerobot", repo_id="lab/hitl")
    info = json.loads((tmp_path / "lerobot" / "meta" / "info.json").read_text())
    assert info["codebase_version"] == "v3.0" and info["fps"] == 10
    assert (summary.episodes, summary.frames) == (2, 11)
    ds = LeRobotDataset("lab/hitl", root=tmp_path / "lerobot", video_backend="pyav")
    assert ds.meta.total_episodes == 2 and ds.num_frames == 11
    for name in ("intervention", "policy_action", "source", "round", "observation.state",
                 "action", "next.reward", "observation.images.front"):
        assert name in ds.features, name
    assert ds.features["observation.images.front"]["dtype"] == "video"
    table = ds.hf_dataset.with_format("numpy")
    steps, meta = hitl_episodes()[0]
    first = np.flatnonzero(np.asarray(table["episode_index"]) == 0)
    np.testing.assert_array_equal(np.asarray(table["intervention"])[first].reshape(-1),
                                  steps["intervention"])
    np.testing.assert_array_equal(np.stack(table["policy_action"])[first], steps["policy_action"])
    assert set(np.asarray(table["source"])[first]) == {meta["source"]}
    assert set(np.asarray(table["round"])[first].reshape(-1)) == {meta["round"]}
    tasks = set(ds.meta.tasks.index)
    assert tasks == {m["instruction"] for _s, m in hitl_episodes()}


def test_exported_png_dataset_serves_items_through_lerobot(hitl_store, tmp_path):
    export_lerobot(hitl_store, tmp_path / "lerobot", use_videos=False)
    ds = LeRobotDataset("robot_learn/hitl.zarr", root=tmp_path / "lerobot")
    steps, meta = hitl_episodes()[0]
    item = ds[1]
    assert item["task"] == meta["instruction"]
    assert item["source"] == meta["source"] and int(item["round"]) == meta["round"]
    assert bool(item["intervention"]) == bool(steps["intervention"][1])
    np.testing.assert_array_equal(item["action"].numpy(), steps["action"][1])
    image = (item["observation.images.front"].permute(1, 2, 0).numpy() * 255).round()
    np.testing.assert_array_equal(image.astype(np.uint8), steps["images/front"][1])


def test_export_without_cameras_writes_no_image_features(hitl_store, tmp_path):
    summary = export_lerobot(hitl_store, tmp_path / "lerobot", cameras=[])
    assert not any(f.startswith("observation.images.") for f in summary.features)


def test_export_with_h264_round_trips(hitl_store, tmp_path):
    export_lerobot(hitl_store, tmp_path / "lerobot", vcodec="h264")
    import_lerobot(tmp_path / "lerobot", tmp_path / "back")
    got = EpisodeStore.open(tmp_path / "back").episode(1)["steps"]["images/front"]
    want = hitl_episodes()[1][0]["images/front"]
    assert np.abs(got.astype(np.int16) - want).mean() < IMAGE_TOLERANCE


def test_round_trip_keeps_wall_clock_timestamps(tmp_path):
    store = EpisodeStore.create(tmp_path / "store")
    steps, meta = hitl_episodes()[0]
    wall = 1.7e9 + np.arange(len(steps["action"])) * 0.1003
    store.append_episode({**steps, "timestamp": wall}, meta)
    summary = export_lerobot(tmp_path / "store", tmp_path / "lerobot")
    assert "wall_time" in summary.features
    import_lerobot(tmp_path / "lerobot", tmp_path / "back")
    got = EpisodeStore.open(tmp_path / "back").episode(0)["steps"]["timestamp"]
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, wall)
