"""OpenCV camera against a real video file through cv2.VideoCapture."""

import time

import numpy as np
import pytest

from robot_learn.hardware import CameraConfig, CameraError, OpenCVCamera

cv2 = pytest.importorskip("cv2")
imageio = pytest.importorskip("imageio")


@pytest.fixture
def video(tmp_path):
    path = tmp_path / "clip.mp4"
    frames = [np.full((48, 64, 3), 20 * i, dtype=np.uint8) for i in range(10)]
    imageio.mimwrite(path, frames, fps=10, macro_block_size=16)
    return str(path)


def test_frames_come_with_increasing_timestamps(video):
    cam = OpenCVCamera(CameraConfig(video))
    cam.connect()
    (f0, t0), (f1, t1) = cam.read(), cam.read()
    cam.disconnect()
    assert f0.shape == (48, 64, 3) and f0.dtype == np.uint8
    assert t1 > t0
    assert f1.mean() > f0.mean() + 10  # second frame is brighter, as written


def test_background_capture_serves_the_latest_frame(video):
    cam = OpenCVCamera(CameraConfig(video, fps=100))
    cam.connect()
    cam.start_background()
    frame, stamp = cam.read_latest()
    assert frame.shape == (48, 64, 3) and stamp <= time.monotonic()
    cam.disconnect()


def test_unopenable_source_is_named(tmp_path):
    with pytest.raises(CameraError, match="cannot open camera source .*missing.mp4"):
        OpenCVCamera(CameraConfig(str(tmp_path / "missing.mp4"))).connect()
