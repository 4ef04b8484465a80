"""Leader -> follower teleop on two emulators, and recording it into the EpisodeStore."""

import time

import numpy as np
import pytest

from robot_learn.data import EpisodeStore
from robot_learn.hardware import (
    JOINT_NAMES, Robot, SafetyConfig, koch_follower, koch_leader, so101_follower, so101_leader,
)
from robot_learn.hardware.teleop import record_episode, run_teleop, teleop_step


def _pair(leader_emu, follower_emu, cal_dir):
    leader = so101_leader(leader_emu.port, calibration_dir=cal_dir, timeout_ms=50)
    follower = so101_follower(follower_emu.port, calibration_dir=cal_dir, timeout_ms=50,
                              safety=SafetyConfig(max_relative_step=100.0, watchdog_timeout_s=None))
    return leader, follower


def test_arms_satisfy_the_robot_protocol(so101_emulator):
    assert isinstance(so101_follower(so101_emulator.port), Robot)


def test_follower_positions_track_the_leader(so101_emulator, so101_leader_emulator, calibrate_files):
    cal_dir = calibrate_files("so101_follower", "so101_leader")
    leader, follower = _pair(so101_leader_emulator, so101_emulator, cal_dir)
    with leader, follower:
        targets = [1500, 2600, 1900]
        for target in targets:
            for s in so101_leader_emulator.servos.values():
                s.move_by_hand(target)  # the operator moves the leader
            for _ in range(15):
                _, command, _ = teleop_step(leader, follower)
                time.sleep(0.01)
            present = {sid: s.value("Present_Position") for sid, s in so101_emulator.servos.items()}
            assert all(abs(p - target) <= 10 for p in present.values()), (target, present)
        assert leader.get_action()["elbow_flex"] == pytest.approx(command["elbow_flex"])
    # the leader is never torqued
    assert not any(s.torque_enabled for s in so101_leader_emulator.servos.values())


def test_recording_teleop_writes_a_valid_store(so101_emulator, so101_leader_emulator, calibrate_files, tmp_path):
    cal_dir = calibrate_files("so101_follower", "so101_leader")
    leader, follower = _pair(so101_leader_emulator, so101_emulator, cal_dir)
    with leader, follower:
        for s in so101_leader_emulator.servos.values():
            s.move_by_hand(2560)  # +50 in -100..100 (arm joints), 75 in 0..100 (gripper)
        episode = run_teleop(leader, follower, rate_hz=50, iterations=20)
    index = record_episode(tmp_path / "teleop.zarr", episode, task="stack",
                           instruction="put the red cube on the blue cube", operator="tester")
    store = EpisodeStore.open(tmp_path / "teleop.zarr")
    assert index == 0 and store.num_episodes == 1 and store.num_frames == 20
    ep = store.episode(0)
    steps, meta = ep["steps"], ep["meta"]
    assert steps["state"].shape == (20, 6) and steps["action"].shape == (20, 6)
    np.testing.assert_allclose(steps["action"][:, :5], 50.0, atol=0.1)
    np.testing.assert_allclose(steps["action"][:, 5], 75.0, atol=0.1)
    assert steps["state"][-1, 2] > steps["state"][0, 2]  # the follower moved toward the leader
    assert steps["intervention"].all() and not steps["policy_action"].any()
    assert not steps["reward"].any() and not steps["progress"].any() and not steps["phase"].any()
    assert meta["source"] == "teleop" and meta["operator"] == "tester" and meta["task"] == "stack"
    assert episode.stats.summary()["iterations"] == 20


def test_koch_follower_moves_to_commanded_joint_positions(koch_emulator, calibrate_files):
    arm = koch_follower(koch_emulator.port, calibration_dir=calibrate_files("koch_follower"), timeout_ms=50,
                        safety=SafetyConfig(watchdog_timeout_s=None))
    with arm:
        obs = arm.get_observation()
        assert set(JOINT_NAMES) <= set(obs) and "joints" in obs["timestamps"]
        for _ in range(30):
            arm.send_action({"shoulder_pan": 40.0, "gripper": 80.0})
            time.sleep(0.01)
        obs = arm.get_observation()
        assert obs["shoulder_pan"] == pytest.approx(40.0, abs=1.0)
        assert obs["gripper"] == pytest.approx(80.0, abs=1.0)
    assert not any(s.torque_enabled for s in koch_emulator.servos.values())


def _koch_pair(leader_emu, follower_emu, cal_dir, **leader_kwargs):
    leader = koch_leader(leader_emu.port, calibration_dir=cal_dir, timeout_ms=50, **leader_kwargs)
    follower = koch_follower(follower_emu.port, calibration_dir=cal_dir, timeout_ms=50,
                             safety=SafetyConfig(max_relative_step=100.0, watchdog_timeout_s=None))
    return leader, follower


def test_koch_follower_tracks_the_koch_leader(koch_emulator, koch_leader_emulator, calibrate_files):
    leader, follower = _koch_pair(koch_leader_emulator, koch_emulator,
                                  calibrate_files("koch_follower", "koch_leader"))
    with leader, follower:
        for target in (1300, 2800):
            for s in koch_leader_emulator.servos.values():
                s.move_by_hand(target)
            for _ in range(15):
                teleop_step(leader, follower)
                time.sleep(0.01)
            present = {sid: s.value("Present_Position") for sid, s in koch_emulator.servos.items()}
            assert all(abs(p - target) <= 10 for p in present.values()), (target, present)
        assert not any(s.torque_enabled for s in koch_leader_emulator.servos.values())  # limp leader
    assert not any(s.torque_enabled for s in koch_emulator.servos.values())


def test_koch_leader_gripper_trigger_springs_back_and_the_follower_gripper_follows(
        koch_emulator, koch_leader_emulator, calibrate_files):
    leader, follower = _koch_pair(koch_leader_emulator, koch_emulator,
                                  calibrate_files("koch_follower", "koch_leader"), gripper_trigger=20.0)
    grip = koch_leader_emulator.servos[6]
    hold_ticks = round(1024 + 0.2 * 2048)
    with leader, follower:
        # only the trigger is torqued, in current-based position mode under a small current limit
        assert grip.torque_enabled and grip.value("Operating_Mode") == 5 and grip.value("Goal_Current") == 40
        assert grip.value("Goal_Position") == hold_ticks
        assert not any(koch_leader_emulator.servos[i].torque_enabled for i in range(1, 6))
        grip.move_by_hand(2800)  # the operator squeezes the trigger ...
        assert leader.get_action()["gripper"] > 60.0
        for _ in range(30):  # ... and lets go: it returns to its rest position
            teleop_step(leader, follower)
            time.sleep(0.03)
        assert leader.get_action()["gripper"] == pytest.approx(20.0, abs=2.0)
        assert koch_emulator.servos[6].value("Present_Position") == pytest.approx(hold_ticks, abs=45)
    assert not grip.torque_enabled  # torque off on disconnect


def test_hold_joints_are_rejected_on_servos_without_current_control_or_unknown_joints():
    from robot_learn.hardware import ArmConfig, DynamixelBus, FeetechBus
    from robot_learn.hardware.koch import koch_motors
    from robot_learn.hardware.so101 import so101_motors

    with pytest.raises(ValueError, match="hold joint 'gripper' needs current-based position control, which "
                                         "model sts3215 lacks"):
        ArmConfig("so101_leader", "/dev/null", so101_motors(), FeetechBus, "leader", hold_joints={"gripper": 20.0})
    with pytest.raises(ValueError, match="unknown hold joint 'grip'; valid joints: shoulder_pan"):
        ArmConfig("koch_leader", "/dev/null", koch_motors("leader"), DynamixelBus, "leader", hold_joints={"grip": 1.0})
    with pytest.raises(ValueError, match="hold_joints is for leader arms"):
        ArmConfig("koch_follower", "/dev/null", koch_motors("follower"), DynamixelBus, "follower",
                  hold_joints={"gripper": 1.0})
