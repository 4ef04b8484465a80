"""Bad input to the LeRobot interop: clear errors, or a skipped and counted episode."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import FPS, TASKS, lerobot_episodes, write_lerobot_dataset

from robot_learn.data import EpisodeStore
from robot_learn.interop.lerobot_io import (
    InteropError, SkippedEpisodeWarning, export_lerobot, import_lerobot,
)


def _set_info(root, **changes):
    path = root / "meta" / "info.json"
    info = json.loads(path.read_text())
    info.update(changes)
    path.write_text(json.dumps(info))


@pytest.mark.parametrize("version", ["v2.1", "v2.0"])
def test_older_codebase_version_names_the_version_and_the_fix(lerobot_root, tmp_path, version):
    _set_info(lerobot_root, codebase_version=version)
    with pytest.raises(InteropError, match=f"codebase_version '{version}'") as err:
        import_lerobot(lerobot_root, tmp_path / "store")
    assert "v3.0" in str(err.value) and "convert_dataset_v21_to_v30" in str(err.value)
    assert not (tmp_path / "store").exists()


def test_directory_without_info_json_is_not_a_dataset(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(InteropError, match="no meta/info.json"):
        import_lerobot(tmp_path / "empty", tmp_path / "store")


def test_unknown_path_that_is_no_repo_id_is_refused(tmp_path):
    with pytest.raises(InteropError, match="neither a local LeRobotDataset root"):
        import_lerobot(tmp_path / "no" / "such" / "dir", tmp_path / "store")


def test_missing_camera_on_import_lists_the_cameras(lerobot_root, tmp_path):
    with pytest.raises(InteropError, match="camera 'top' is not in") as err:
        import_lerobot(lerobot_root, tmp_path / "store", cameras=["front", "top"])
    assert "observation.images.front, observation.images.wrist" in str(err.value)


def test_missing_camera_on_export_lists_the_cameras(hitl_store, tmp_path):
    with pytest.raises(InteropError, match="camera 'wrist' is not in store .*; its cameras: front"):
        export_lerobot(hitl_store, tmp_path / "out", cameras=["wrist"])
    assert not (tmp_path / "out").exists()


def test_fps_other_than_required_is_refused(lerobot_root, tmp_path):
    with pytest.raises(InteropError, match=f"recorded at {FPS} fps, expected 30 fps"):
        import_lerobot(lerobot_root, tmp_path / "store", fps=30)


def test_import_into_store_of_another_rate_is_refused(lerobot_root, tmp_path):
    _set_info(lerobot_root, fps=30)
    store = EpisodeStore.create(tmp_path / "store")  # no recorded rate: our 10 Hz data
    store.append_episode({"action": np.zeros((2, 4), np.float32)},
                         {"task": "t", "instruction": "", "success": True, "seed": 0,
                          "source": "demo"})
    with pytest.raises(InteropError, match="holds 10 fps data but the dataset is 30 fps"):
        import_lerobot(lerobot_root, tmp_path / "store")
    assert EpisodeStore.open(tmp_path / "store").num_episodes == 1


def test_export_at_another_rate_than_recorded_is_refused(lerobot_root, tmp_path):
    import_lerobot(lerobot_root, tmp_path / "store")
    with pytest.raises(InteropError, match="holds 10 fps data; exporting it as 15 fps"):
        export_lerobot(tmp_path / "store", tmp_path / "out", fps=15)


def test_export_refuses_an_existing_root_and_unknown_codec(hitl_store, tmp_path):
    (tmp_path / "out").mkdir()
    with pytest.raises(InteropError, match="already exists"):
        export_lerobot(hitl_store, tmp_path / "out")
    with pytest.raises(InteropError, match="unknown vcodec 'vp9'; valid codecs: .*h264"):
        export_lerobot(hitl_store, tmp_path / "new", vcodec="vp9")


def test_undecodable_video_skips_that_episode_and_counts_it(tmp_path):
    root = tmp_path / "tiny"
    write_lerobot_dataset(root, one_video_file_per_episode=True)
    videos = sorted((root / "videos" / "observation.images.front").rglob("*.mp4"))
    assert len(videos) == 3  # one file per episode, so only episode 1 is damaged
    videos[1].write_bytes(b"\x00not a video" * 64)
    with pytest.warns(SkippedEpisodeWarning, match="skipping LeRobot episode 1: cannot decode"):
        summary = import_lerobot(root, tmp_path / "store")
    assert (summary.episodes, [ep for ep, _ in summary.skipped]) == (2, [1])
    assert "skipped: 1 episodes" in str(summary) and "episode 1:" in str(summary)
    store = EpisodeStore.open(tmp_path / "store")
    expected = lerobot_episodes()
    assert list(store.meta["instruction"]) == [TASKS[0], TASKS[2]]
    np.testing.assert_array_equal(store.episode(1)["steps"]["action"], expected[2]["action"])


def test_missing_lerobot_says_how_to_install(tmp_path):
    code = ("import sys; sys.modules['lerobot'] = None\n"
            "from robot_learn.interop.lerobot_io import import_lerobot, InteropError\n"
            "try:\n    import_lerobot('x', 'y')\n"
            "except InteropError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert "`lerobot` package is not importable" in out.stdout, out.stderr
    assert "make .venv-lerobot/.installed" in out.stdout


def test_hub_id_without_hub_access_names_the_cause(tmp_path):
    # Offline mode makes huggingface_hub refuse at once, with no network traffic.
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_LEROBOT_HOME": str(tmp_path / "home")}
    code = ("from robot_learn.interop.lerobot_io import import_lerobot, InteropError\n"
            "try:\n    import_lerobot('lab/some-dataset', 'store')\n"
            "except InteropError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, cwd=tmp_path, env=env)
    assert "cannot load LeRobotDataset 'lab/some-dataset'" in out.stdout, out.stderr
    assert "network access to the Hub" in out.stdout and "OfflineModeIsEnabled" in out.stdout
    assert not (tmp_path / "store").exists()


def test_import_into_store_with_a_camera_the_dataset_lacks_is_refused(lerobot_root, tmp_path):
    import_lerobot(lerobot_root, tmp_path / "store")
    with pytest.raises(InteropError, match=r"missing in dataset: \['images/wrist'\]"):
        import_lerobot(lerobot_root, tmp_path / "store", cameras=["front"])
    assert EpisodeStore.open(tmp_path / "store").num_episodes == 3


def test_unknown_source_lists_valid_ones_before_writing(lerobot_root, tmp_path):
    with pytest.raises(InteropError, match="unknown source 'human'; valid sources: demo, "):
        import_lerobot(lerobot_root, tmp_path / "store", source="human")
    assert not (tmp_path / "store").exists()
