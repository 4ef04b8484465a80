"""Calibration: recorded through the bus from scripted joint motion, saved, loaded, applied."""

import json
import re

import pytest

from robot_learn.hardware import (
    CalibrationError, MotorCalibration, load_calibration, normalize, so101_follower, unnormalize,
)


def test_calibrate_records_ranges_and_the_file_reloads(so101_emulator, tmp_path):
    arm = so101_follower(so101_emulator.port, robot_id="arm7", calibration_dir=str(tmp_path), timeout_ms=50)
    servos = so101_emulator.servos
    for s in servos.values():
        s.move_by_hand(2100)  # the operator's "middle" pose
    sweep = iter([1200, 3000, 2500])  # then each joint visits these positions

    def done() -> bool:
        pos = next(sweep, None)
        if pos is None:
            return True
        for s in servos.values():
            s.move_by_hand(pos)
        return False

    cal = arm.calibrate(input_fn=lambda prompt: "", done=done)
    arm.disconnect()
    path = tmp_path / "so101_follower" / "arm7.json"
    assert path.exists()
    assert load_calibration(path) == cal
    # middle pose 2100 reads 2048 after homing: offset 52; range recorded relative to it
    assert cal["elbow_flex"] == MotorCalibration(3, 0, 52, 1200 - 52, 3000 - 52)

    for s in servos.values():
        s.move_by_hand(3000)
    arm = so101_follower(so101_emulator.port, robot_id="arm7", calibration_dir=str(tmp_path), timeout_ms=50)
    arm.connect()  # a follower holds where it stands: goal := present
    obs = arm.get_observation()
    assert obs["elbow_flex"] == pytest.approx(100.0)
    assert obs["gripper"] == pytest.approx(100.0)
    arm.disconnect()


@pytest.mark.parametrize("mode, raw_min, raw_max, lo, hi", [
    ("m100_100", 1024, 3072, -100.0, 100.0),
    ("0_100", 1024, 3072, 0.0, 100.0),
    ("degrees", 1024, 3072, -90.0, 90.0),
])
def test_normalisation_is_exact_at_the_range_ends(mode, raw_min, raw_max, lo, hi):
    cal = MotorCalibration(1, 0, 0, raw_min, raw_max)
    assert normalize(raw_min, cal, mode, 4096) == pytest.approx(lo)
    assert normalize(raw_max, cal, mode, 4096) == pytest.approx(hi)
    assert unnormalize(lo, cal, mode, 4096) == raw_min
    assert unnormalize(hi, cal, mode, 4096) == raw_max


def test_drive_mode_flips_direction_and_homing_offset_shifts():
    cal = MotorCalibration(1, 1, 100, 1024, 3072)
    assert normalize(1124, cal, "m100_100", 4096) == pytest.approx(100.0)
    assert normalize(1124, cal, "0_100", 4096) == pytest.approx(100.0)
    assert unnormalize(-100.0, cal, "m100_100", 4096) == 3172


def test_targets_beyond_the_range_are_clipped_to_it():
    cal = MotorCalibration(1, 0, 0, 1024, 3072)
    assert unnormalize(150.0, cal, "m100_100", 4096) == 3072
    assert unnormalize(-500.0, cal, "degrees", 4096) == 1024


def test_unknown_norm_mode_lists_the_valid_ones():
    with pytest.raises(ValueError, match="unknown normalisation mode 'percent'; valid modes: degrees"):
        normalize(0, MotorCalibration(1, 0, 0, 0, 10), "percent", 4096)


def test_missing_calibration_file_names_the_file_and_the_command(so101_emulator, tmp_path):
    arm = so101_follower(so101_emulator.port, robot_id="nope", calibration_dir=str(tmp_path), timeout_ms=50)
    with pytest.raises(CalibrationError, match=r"nope\.json not found; create it with `robot-learn hw calibrate "
                                               r"--robot so101_follower --port .* --id nope`"):
        arm.connect()
    assert not arm.is_connected
    assert not any(s.torque_enabled for s in so101_emulator.servos.values())


@pytest.mark.parametrize("content, why", [
    ("{not json", "Expecting property name"),
    (json.dumps({"shoulder_pan": {"id": 1}}), "lacks drive_mode"),
    (json.dumps([1, 2]), "top level is not an object"),
])
def test_corrupt_calibration_file_is_named_with_the_reason(tmp_path, content, why):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(CalibrationError, match=rf"calibration file .*bad\.json is corrupt \(.*{why}.*create it with"):
        load_calibration(path)


def test_calibration_without_an_entry_for_a_joint_is_rejected(tmp_path, calibrate_files, so101_emulator):
    cal_dir = calibrate_files("so101_follower")
    path = tmp_path / "calib" / "so101_follower" / "default.json"
    data = json.loads(path.read_text())
    del data["gripper"]
    path.write_text(json.dumps(data))
    arm = so101_follower(so101_emulator.port, calibration_dir=cal_dir, timeout_ms=50)
    with pytest.raises(CalibrationError, match="has no entry for gripper"):
        arm.connect()


@pytest.mark.parametrize("robot_id", ["../../x", "a/b", "/etc/passwd", ".hidden", "", "x" * 200])
def test_a_robot_id_that_would_leave_the_calibration_directory_is_refused(tmp_path, robot_id):
    from robot_learn.hardware import calibration_path

    with pytest.raises(CalibrationError, match=re.escape(f"invalid robot id {robot_id!r}: use letters, digits")):
        calibration_path(tmp_path, "so101_follower", robot_id)
    assert calibration_path(tmp_path, "so101_follower", "left-arm_2.v1") == tmp_path / "so101_follower" / "left-arm_2.v1.json"
