"""Tiling camera frames and writing mp4 files."""

import imageio.v2 as imageio
import numpy as np
import pytest

from robot_learn.evaluation import tile_cameras, write_video


def test_tile_cameras_places_frames_side_by_side_in_order():
    front = np.full((4, 6, 3), 10, np.uint8)
    wrist = np.full((4, 5, 3), 200, np.uint8)
    tiled = tile_cameras({"wrist": wrist, "front": front}, order=["front", "wrist"])
    assert tiled.shape == (4, 11, 3)
    assert (tiled[:, :6] == 10).all() and (tiled[:, 6:] == 200).all()


def test_tile_cameras_pads_shorter_frames():
    tiled = tile_cameras({"a": np.ones((4, 2, 3), np.uint8), "b": np.ones((2, 2, 3), np.uint8)})
    assert tiled.shape == (4, 4, 3) and (tiled[2:, 2:] == 0).all()


def test_tile_cameras_names_unknown_camera():
    with pytest.raises(ValueError, match=r"unknown camera.*side.*available: front"):
        tile_cameras({"front": np.zeros((2, 2, 3), np.uint8)}, order=["side"])


def test_write_video_round_trips_frame_count_and_content(tmp_path):
    # Odd size on purpose: yuv420p needs even sizes, write_video pads.
    frames = [np.full((33, 47, 3), 20 * i, np.uint8) for i in range(8)]
    path = write_video(frames, tmp_path / "v" / "episode_000.mp4", fps=10)
    back = imageio.mimread(path)
    assert len(back) == 8
    assert back[0].shape[:2] == (34, 48)
    # Lossy codec: brightness should still rise frame by frame.
    means = [f[:33, :47].mean() for f in back]
    assert all(b > a for a, b in zip(means, means[1:]))


def test_write_video_refuses_no_frames(tmp_path):
    with pytest.raises(ValueError, match="no frames"):
        write_video([], tmp_path / "x.mp4")
