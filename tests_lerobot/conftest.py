"""Fixtures for the LeRobotDataset interop tests: tiny datasets written by the real
lerobot library and tiny episode stores written by our EpisodeStore.

These tests run in .venv-lerobot (`make test-lerobot`); lerobot is imported at
module level on purpose, so a venv without it fails instead of skipping.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from lerobot.datasets.lerobot_dataset import LeRobotDataset  # noqa: E402

from robot_learn.data import EpisodeStore  # noqa: E402

torch.set_num_threads(1)


def pytest_configure(config) -> None:
    # Known noise from lerobot 0.4.4 / datasets, not from our code.
    config.addinivalue_line(
        "filterwarnings", "ignore:Conversion of an array with ndim > 0:DeprecationWarning")
    config.addinivalue_line(
        "filterwarnings", "ignore:Converting input from bool:RuntimeWarning")

FPS = 10
SIZE = 32
LENGTHS = (6, 8, 7)  # frames per episode of the lerobot-made dataset
TASKS = ("pick up the red cube", "open the drawer", "pick up the red cube")


def smooth_image(t: int, offset: int) -> np.ndarray:
    """A codec-friendly frame: colour gradients plus a square that moves with t."""
    y, x = np.mgrid[0:SIZE, 0:SIZE]
    img = np.stack([x * 6 + 10 * t, y * 6 + offset, np.full_like(x, 60 + 20 * offset)], -1)
    img = np.clip(img, 0, 255).astype(np.uint8)
    img[8:16, 4 + 2 * t:12 + 2 * t] = (250, 250, 40)
    return img


def lerobot_episodes() -> list[dict[str, np.ndarray | str]]:
    """What the lerobot-made dataset holds, episode by episode."""
    rng = np.random.default_rng(0)
    episodes = []
    for ep, length in enumerate(LENGTHS):
        episodes.append({
            "state": rng.normal(size=(length, 6)).astype(np.float32),
            "action": rng.normal(size=(length, 4)).astype(np.float32),
            "front": np.stack([smooth_image(t, ep * 30) for t in range(length)]),
            "wrist": np.stack([smooth_image(t, 90 + ep * 20)[::-1] for t in range(length)]),
            "task": TASKS[ep],
        })
    return episodes


def write_lerobot_dataset(root: Path, one_video_file_per_episode: bool = False) -> None:
    """Create a LeRobotDataset v3 with two video cameras using lerobot itself."""
    features = {
        "observation.state": {"dtype": "float32", "shape": (6,), "names": None},
        "action": {"dtype": "float32", "shape": (4,), "names": None},
        "observation.images.front": {"dtype": "video", "shape": (SIZE, SIZE, 3),
                                     "names": ["height", "width", "channels"]},
        "observation.images.wrist": {"dtype": "video", "shape": (SIZE, SIZE, 3),
                                     "names": ["height", "width", "channels"]},
    }
    ds = LeRobotDataset.create("test/tiny", FPS, features, root=root, use_videos=True,
                               video_backend="pyav")
    if one_video_file_per_episode:  # so one episode's video can be damaged alone
        ds.meta.update_chunk_settings(video_files_size_in_mb=1e-9)
    for episode in lerobot_episodes():
        for t in range(len(episode["action"])):
            ds.add_frame({"observation.state": episode["state"][t], "action": episode["action"][t],
                          "observation.images.front": episode["front"][t],
                          "observation.images.wrist": episode["wrist"][t],
                          "task": episode["task"]})
        ds.save_episode(parallel_encoding=False)
    ds.finalize()


@pytest.fixture(scope="session")
def _lerobot_master(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("lerobot") / "tiny"
    write_lerobot_dataset(root)
    return root


@pytest.fixture
def lerobot_root(_lerobot_master, tmp_path) -> Path:
    """A fresh copy of a 3-episode LeRobotDataset v3 (so a test may damage it)."""
    root = tmp_path / "tiny"
    shutil.copytree(_lerobot_master, root)
    return root


def hitl_episodes() -> list[tuple[dict[str, np.ndarray], dict]]:
    """Episodes with every HITL field, as an improvement round records them."""
    rng = np.random.default_rng(1)
    episodes = []
    metas = [
        {"task": "stack", "instruction": "put the red cube on the blue cube", "success": True,
         "seed": 3, "source": "intervention", "round": 2, "policy_id": "dp-r1", "operator": "ana"},
        {"task": "bin_place", "instruction": "put the green cube in the bin", "success": False,
         "seed": 9, "source": "rollout", "round": 1, "policy_id": "dp-r0", "operator": ""},
    ]
    for ep, meta in enumerate(metas):
        length = 5 + ep
        steps = {
            "state": rng.normal(size=(length, 10)).astype(np.float32),
            "action": rng.normal(size=(length, 5)).astype(np.float32),
            "policy_action": rng.normal(size=(length, 5)).astype(np.float32),
            "intervention": np.arange(length) % 3 == 1,
            "reward": rng.random(length).astype(np.float32),
            "phase": np.arange(length, dtype=np.int64) // 2,
            "images/front": np.stack([smooth_image(t, 40 * ep) for t in range(length)]),
        }
        episodes.append((steps, meta))
    return episodes


@pytest.fixture
def hitl_store(tmp_path) -> Path:
    """A two-episode store with HITL fields (intervention, policy_action, source, round...)."""
    path = tmp_path / "hitl.zarr"
    store = EpisodeStore.create(path)
    for steps, meta in hitl_episodes():
        store.append_episode(steps, meta)
    return path
