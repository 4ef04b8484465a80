"""`import_lerobot`: a LeRobotDataset v3 written by lerobot itself becomes store episodes."""

from __future__ import annotations

import numpy as np
from conftest import FPS, TASKS, lerobot_episodes

from robot_learn.data import EpisodeStore
from robot_learn.interop.lerobot_io import import_lerobot
from robot_learn.interop.lerobot_keys import recorded_fps

IMAGE_TOLERANCE = 8.0  # mean abs difference (0-255) allowed for lossy video


def test_import_keeps_actions_states_tasks_and_fps(lerobot_root, tmp_path):
    summary = import_lerobot(lerobot_root, tmp_path / "store")
    store = EpisodeStore.open(tmp_path / "store")
    expected = lerobot_episodes()
    assert (summary.episodes, summary.frames, summary.skipped) == (3, 21, [])
    assert store.num_episodes == 3 and store.num_frames == 21
    assert set(store.keys) == {"state", "action", "images/front", "images/wrist"}
    assert recorded_fps(tmp_path / "store") == FPS
    for index, want in enumerate(expected):
        episode = store.episode(index)
        np.testing.assert_array_equal(episode["steps"]["action"], want["action"])
        np.testing.assert_array_equal(episode["steps"]["state"], want["state"])
        assert episode["meta"]["instruction"] == TASKS[index]
        assert episode["meta"]["seed"] == index
        assert episode["meta"]["source"] == "teleop"
        assert episode["meta"]["task"] == "tiny"


def test_import_decodes_each_camera_to_its_own_frames(lerobot_root, tmp_path):
    import_lerobot(lerobot_root, tmp_path / "store")
    store = EpisodeStore.open(tmp_path / "store")
    for index, want in enumerate(lerobot_episodes()):
        steps = store.episode(index)["steps"]
        for camera in ("front", "wrist"):
            got = steps[f"images/{camera}"]
            assert got.dtype == np.uint8 and got.shape == want[camera].shape
            diff = np.abs(got.astype(np.int16) - want[camera]).mean(axis=(1, 2, 3))
            assert diff.max() < IMAGE_TOLERANCE, (index, camera, diff)
            # each frame matches its own time step better than its neighbours
            other = np.abs(got[1:].astype(np.int16) - want[camera][:-1]).mean()
            assert other > diff.mean()


def test_import_selects_cameras_by_short_or_full_name(lerobot_root, tmp_path):
    summary = import_lerobot(lerobot_root, tmp_path / "a", cameras=["wrist"])
    assert summary.cameras == {"observation.images.wrist": "images/wrist"}
    assert EpisodeStore.open(tmp_path / "a").keys == ("action", "images/wrist", "state")
    import_lerobot(lerobot_root, tmp_path / "b", cameras=["observation.images.front"])
    assert "images/front" in EpisodeStore.open(tmp_path / "b").keys


def test_import_appends_to_a_store_of_the_same_rate(lerobot_root, tmp_path):
    import_lerobot(lerobot_root, tmp_path / "store", task="pick", source="demo")
    import_lerobot(lerobot_root, tmp_path / "store", fps=FPS)
    store = EpisodeStore.open(tmp_path / "store")
    assert store.num_episodes == 6
    assert list(store.meta["source"]) == ["demo"] * 3 + ["teleop"] * 3
    assert list(store.meta["task"][:3]) == ["pick"] * 3


def test_import_reads_png_image_features(tmp_path):
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    features = {"action": {"dtype": "float32", "shape": (2,), "names": None},
                "observation.image": {"dtype": "image", "shape": (16, 16, 3),
                                      "names": ["height", "width", "channels"]}}
    ds = LeRobotDataset.create("test/png", 5, features, root=tmp_path / "png",
                               use_videos=False)
    rng = np.random.default_rng(2)
    images = rng.integers(0, 255, size=(4, 16, 16, 3), dtype=np.uint8)
    for t in range(4):
        ds.add_frame({"action": np.full(2, t, np.float32), "observation.image": images[t],
                      "task": "push the T"})
    ds.save_episode()
    ds.finalize()
    summary = import_lerobot(tmp_path / "png", tmp_path / "store")
    episode = EpisodeStore.open(tmp_path / "store").episode(0)
    assert summary.cameras == {"observation.image": "images/image"}
    np.testing.assert_array_equal(episode["steps"]["images/image"], images)  # PNG is lossless
    assert episode["meta"]["instruction"] == "push the T"
    assert recorded_fps(tmp_path / "store") == 5
