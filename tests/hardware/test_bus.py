"""ServoBus end to end: vendor SDK -> pyserial -> pty -> emulator, for both vendors."""

import time

import pytest

from robot_learn.hardware import (
    DynamixelBus, FeetechBus, MotorNotRespondingError, PortNotFoundError, UnknownMotorError,
)
from robot_learn.hardware.bus import Motor
from robot_learn.hardware.koch import koch_motors
from robot_learn.hardware.so101 import so101_motors


@pytest.fixture(params=["feetech", "dynamixel"])
def bus(request, so101_emulator, koch_emulator):
    if request.param == "feetech":
        b, emu = FeetechBus(so101_emulator.port, so101_motors(), timeout_ms=50), so101_emulator
    else:
        b, emu = DynamixelBus(koch_emulator.port, koch_motors("follower"), timeout_ms=50), koch_emulator
    b.connect()
    yield b, emu
    b.disconnect()


def test_ping_returns_each_motors_model_number(bus):
    b, _ = bus
    for name, motor in b.motors.items():
        assert b.ping(name) == motor.table.model_number
    assert b.ping(42) is None


def test_scan_finds_exactly_the_emulated_ids(bus):
    b, emu = bus
    assert sorted(b.scan(range(0, 10))) == sorted(emu.servos)


def test_sync_write_then_sync_read_round_trips_and_the_servos_move(bus):
    b, emu = bus
    goals = {n: 1500 + 100 * i for i, n in enumerate(b.motors)}
    b.sync_write("Goal_Position", goals)
    assert b.sync_read("Goal_Position") == goals
    b.enable_torque()
    time.sleep(0.25)  # ~12 time constants of the emulated servo
    present = b.sync_read("Present_Position")
    assert all(abs(present[n] - goals[n]) <= 2 for n in goals), present
    b.disable_torque()
    assert not any(b.torque_enabled().values())


def test_torque_off_servos_do_not_move(bus):
    b, _ = bus
    before = b.sync_read("Present_Position")
    b.sync_write("Goal_Position", {n: 100 for n in b.motors})
    time.sleep(0.1)
    assert b.sync_read("Present_Position") == before


def test_unknown_port_error_lists_the_ports_found():
    b = FeetechBus("/dev/ttyNOPE42", so101_motors())
    with pytest.raises(PortNotFoundError, match=r"'/dev/ttyNOPE42' not found; ports found: "):
        b.connect()


def test_motor_id_that_does_not_answer_is_named_with_the_ids_found(so101_emulator):
    motors = dict(so101_motors(), extra=Motor(9, "sts3215"))
    b = FeetechBus(so101_emulator.port, motors, timeout_ms=20, retries=1)
    with pytest.raises(MotorNotRespondingError, match=r"no reply from 'extra' \(id 9\).*ids answering: \[1, 2, 3, 4, 5, 6\]"):
        b.connect()
    assert not b.is_connected


def test_unknown_register_and_motor_list_the_valid_names(bus):
    b, _ = bus
    with pytest.raises(UnknownMotorError, match="no register 'Goal_Pos'.*valid registers: .*Goal_Position"):
        b.sync_read("Goal_Pos")
    with pytest.raises(UnknownMotorError, match="unknown motor 'elbow'; valid motors: shoulder_pan"):
        b.read("Present_Position", "elbow")


def test_signed_registers_decode_negative_values(koch_emulator):
    b = DynamixelBus(koch_emulator.port, koch_motors("follower"))
    b.connect()
    b.write("Homing_Offset", "elbow_flex", -250)
    assert b.read("Homing_Offset", "elbow_flex") == -250
    b.disconnect()
