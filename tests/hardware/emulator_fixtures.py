"""Emulated SO-101 (Feetech) and Koch (Dynamixel) buses on ptys, and calibration files,
as pytest fixtures: shared by the hardware tests and the ``robot-learn hw`` CLI tests.
Everything goes vendor SDK -> pyserial -> pty -> emulator."""

from __future__ import annotations

import numpy as np
import pytest

from robot_learn.hardware import MotorCalibration, calibration_path, save_calibration
from robot_learn.hardware.emulator import ServoBusEmulator
from robot_learn.hardware.koch import koch_motors
from robot_learn.hardware.so101 import so101_motors

RANGE_MIN, RANGE_MAX = 1024, 3072  # calibrated range used by the fixtures


def _servos(motors):
    return [(m.id, m.model) for m in motors.values()]


@pytest.fixture
def so101_emulator():
    with ServoBusEmulator("feetech", _servos(so101_motors()), tau_s=0.02) as emu:
        yield emu


@pytest.fixture
def so101_leader_emulator():
    with ServoBusEmulator("feetech", _servos(so101_motors()), tau_s=0.02) as emu:
        yield emu


@pytest.fixture
def koch_emulator():
    with ServoBusEmulator("dynamixel", _servos(koch_motors("follower")), tau_s=0.02) as emu:
        yield emu


@pytest.fixture
def koch_leader_emulator():
    # A slow response (150 ms): the leader's held gripper is current-limited, a weak spring.
    with ServoBusEmulator("dynamixel", _servos(koch_motors("leader")), tau_s=0.15) as emu:
        yield emu


@pytest.fixture
def video(tmp_path):
    """A 60-frame 64x48 mp4 whose brightness rises frame by frame (read through cv2)."""
    imageio = pytest.importorskip("imageio")
    path = tmp_path / "clip.mp4"
    frames = [np.full((48, 64, 3), 4 * i, dtype=np.uint8) for i in range(60)]
    imageio.mimwrite(path, frames, fps=30, macro_block_size=16)
    return str(path)


@pytest.fixture
def calibrate_files(tmp_path):
    """Write a calibration (offset 0, range 1024..3072) for robot types; returns the dir."""

    def write(*robot_types: str, robot_id: str = "default"):
        for robot_type in robot_types:
            motors = koch_motors("leader" if "leader" in robot_type else "follower") \
                if robot_type.startswith("koch") else so101_motors()
            cal = {n: MotorCalibration(m.id, 0, 0, RANGE_MIN, RANGE_MAX) for n, m in motors.items()}
            save_calibration(calibration_path(tmp_path / "calib", robot_type, robot_id), cal)
        return str(tmp_path / "calib")

    return write
