"""OpenCV camera against a real video file through cv2.VideoCapture."""

import time

import numpy as np
import pytest

from robot_learn.hardware import CameraConfig, CameraError, OpenCVCamera

cv2 = pytest.importorskip("cv2")
imageio = pytest.importorskip("imageio")


def test_frames_come_with_increasing_timestamps(video):
    cam = OpenCVCamera(CameraConfig(video))
    cam.connect()
    (f0, t0), (f1, t1) = cam.read(), cam.read()
    cam.disconnect()
    assert f0.shape == (48, 64, 3) and f0.dtype == np.uint8
    assert t1 > t0
    assert f1.mean() > f0.mean() + 2  # second frame is brighter, as written


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


def test_arm_observation_carries_camera_frames_stamped_with_the_joint_read(so101_emulator, calibrate_files, video):
    from robot_learn.hardware import so101_follower

    arm = so101_follower(so101_emulator.port, calibration_dir=calibrate_files("so101_follower"), timeout_ms=50,
                         cameras={"front": CameraConfig(video)})
    with arm:
        before = time.monotonic()
        observations = [arm.get_observation() for _ in range(5)]
        after = time.monotonic()
    for obs in observations:
        frame, stamps = obs["images"]["front"], obs["timestamps"]
        assert frame.shape == (48, 64, 3) and frame.dtype == np.uint8
        assert before <= stamps["joints"] <= after and before <= stamps["front"] <= after
        # the frame is grabbed right after the joints' sync read, within a few ms of it
        assert abs(stamps["front"] - stamps["joints"]) < 0.05
    assert [o["timestamps"]["front"] for o in observations] == sorted(o["timestamps"]["front"] for o in observations)
    assert observations[-1]["images"]["front"].mean() > observations[0]["images"]["front"].mean()  # later frames
    assert not arm.cameras["front"]._cap  # released on disconnect


def test_teleop_recording_stores_the_arm_camera_frames(so101_emulator, so101_leader_emulator, calibrate_files,
                                                       video, tmp_path):
    from robot_learn.data import EpisodeStore
    from robot_learn.hardware import SafetyConfig, so101_follower, so101_leader
    from robot_learn.hardware.teleop import record_episode, run_teleop

    cal_dir = calibrate_files("so101_follower", "so101_leader")
    leader = so101_leader(so101_leader_emulator.port, calibration_dir=cal_dir, timeout_ms=50)
    follower = so101_follower(so101_emulator.port, calibration_dir=cal_dir, timeout_ms=50,
                              safety=SafetyConfig(watchdog_timeout_s=None), cameras={"front": CameraConfig(video)})
    with leader, follower:
        episode = run_teleop(leader, follower, rate_hz=30, iterations=8)
    record_episode(tmp_path / "cam.zarr", episode, task="stack", instruction="")
    steps = EpisodeStore.open(tmp_path / "cam.zarr").episode(0)["steps"]
    assert steps["images/front"].shape == (8, 48, 64, 3) and steps["images/front"].dtype == np.uint8
    assert steps["state"].shape == (8, 6)
