"""Injected faults are retried within the budget or raised clearly; torque ends off."""

import time

import pytest

from robot_learn.hardware import (
    BusDisconnectedError, CorruptReplyError, FeetechBus, MotorNotRespondingError, so101_follower,
)
from robot_learn.hardware.so101 import so101_motors


@pytest.fixture
def bus(so101_emulator):
    b = FeetechBus(so101_emulator.port, so101_motors(), timeout_ms=30, retries=2)
    b.connect()
    yield b
    b.disconnect(disable_torque=False) if b.is_connected else None


@pytest.mark.parametrize("kind, delay_s, retries", [
    ("drop", 0, 1), ("corrupt", 0, 1),
    ("delay", 0.005, 0),   # slower than usual but inside the 30 ms timeout
    ("delay", 0.045, 1),   # misses the timeout once; the retry gets through
])
def test_a_single_fault_is_retried_and_the_read_succeeds(bus, so101_emulator, kind, delay_s, retries):
    expected = {n: so101_emulator.servos[m.id].value("Present_Position") for n, m in bus.motors.items()}
    so101_emulator.inject(kind, count=1, delay_s=delay_s, servo_id=3)
    assert bus.sync_read("Present_Position") == expected
    assert bus.retries_used == retries


def test_replies_slower_than_the_whole_retry_budget_raise(bus, so101_emulator):
    so101_emulator.inject("delay", count=3, delay_s=0.2, servo_id=3)
    with pytest.raises(MotorNotRespondingError, match="failed after 3 attempts"):
        bus.sync_read("Present_Position")


def test_persistent_drops_raise_naming_motor_and_register(bus, so101_emulator):
    so101_emulator.inject("drop", count=10, servo_id=4)
    with pytest.raises(MotorNotRespondingError,
                       match=r"sync-reading Present_Position \(motor 'wrist_flex', id 4\) failed after 3 attempts"):
        bus.sync_read("Present_Position")


def test_persistent_corruption_raises_a_checksum_error(bus, so101_emulator):
    so101_emulator.inject("corrupt", count=10, servo_id=2)
    with pytest.raises(CorruptReplyError, match=r"motor 'shoulder_lift', id 2"):
        bus.read("Present_Position", "shoulder_lift")


def test_a_bus_fault_during_a_command_leaves_torque_disabled(so101_emulator, calibrate_files):
    arm = so101_follower(so101_emulator.port, calibration_dir=calibrate_files("so101_follower"), timeout_ms=30)
    arm.connect()
    assert all(s.torque_enabled for s in so101_emulator.servos.values())
    so101_emulator.inject("drop", count=3, servo_id=5)  # exhausts the retry budget once
    with pytest.raises(MotorNotRespondingError):
        arm.send_action({"wrist_roll": 5.0})
    assert not any(s.torque_enabled for s in so101_emulator.servos.values())
    arm.disconnect()


def test_disconnect_raises_a_clear_error_and_the_arm_can_still_be_closed(so101_emulator, calibrate_files):
    arm = so101_follower(so101_emulator.port, calibration_dir=calibrate_files("so101_follower"), timeout_ms=30)
    arm.connect()
    so101_emulator.disconnect()
    with pytest.raises(BusDisconnectedError, match=so101_emulator.port or "disconnected"):
        arm.get_observation()
    assert not arm.is_connected
    arm.disconnect()  # must not raise


def test_an_exception_inside_the_arm_context_turns_torque_off(so101_emulator, calibrate_files):
    arm = so101_follower(so101_emulator.port, calibration_dir=calibrate_files("so101_follower"), timeout_ms=50)
    with pytest.raises(ZeroDivisionError):
        with arm:
            assert all(s.torque_enabled for s in so101_emulator.servos.values())
            1 / 0
    time.sleep(0.01)
    assert not any(s.torque_enabled for s in so101_emulator.servos.values())


def test_an_arm_whose_motor_does_not_answer_refuses_to_connect_and_stays_limp(calibrate_files):
    from robot_learn.hardware.emulator import ServoBusEmulator

    # The gripper servo (id 6) is unplugged: only ids 1..5 are on the bus.
    with ServoBusEmulator("feetech", [(i, "sts3215") for i in range(1, 6)]) as emu:
        arm = so101_follower(emu.port, calibration_dir=calibrate_files("so101_follower"), timeout_ms=20, retries=0)
        with pytest.raises(MotorNotRespondingError,
                           match=r"no reply from 'gripper' \(id 6\); ids answering: \[1, 2, 3, 4, 5\]"):
            arm.connect()
        assert not arm.is_connected
        assert not any(s.torque_enabled for s in emu.servos.values())
