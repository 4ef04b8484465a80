"""Safety on a follower arm against the emulator: clipping, watchdog, e-stop, signals."""

import os
import signal
import time

import numpy as np
import pytest

from robot_learn.hardware import EStopError, SafetyConfig, SafetyLayer, so101_follower
from robot_learn.hardware.estop import KeyEStop


def _arm(emu, cal_dir, **safety):
    return so101_follower(emu.port, calibration_dir=cal_dir, timeout_ms=50,
                          safety=SafetyConfig(**safety))


def _eventually(predicate, timeout_s=1.0):
    """SYNC_WRITE has no reply, so the servos apply it a moment after the call returns."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.005)
    return predicate()


def _goals(emu):
    return {sid: s.value("Goal_Position") for sid, s in emu.servos.items()}


def test_out_of_limit_commands_are_clipped_to_the_limits(so101_emulator, calibrate_files):
    arm = _arm(so101_emulator, calibrate_files("so101_follower"),
               position_limits={"elbow_flex": (-20.0, 20.0)}, watchdog_timeout_s=None)
    with arm:
        sent = arm.send_action({"elbow_flex": 80.0, "gripper": 50.0})
        assert sent["elbow_flex"] == 20.0
        assert arm.safety.last_events and "elbow_flex" in arm.safety.last_events[0]
        # 20 units of -100..100 over range 1024..3072 -> 2048 + 0.1 * 2048 ticks
        assert _eventually(lambda: so101_emulator.servos[3].value("Goal_Position") == 2048 + 205)


def test_each_command_step_is_clipped_to_max_relative_step(so101_emulator, calibrate_files):
    arm = _arm(so101_emulator, calibrate_files("so101_follower"), max_relative_step=5.0,
               watchdog_timeout_s=None)
    with arm:
        present = arm.get_observation()["shoulder_pan"]
        sent = arm.send_action(np.array([60.0, 0, 0, 0, 0, 50.0]))
        assert sent["shoulder_pan"] == pytest.approx(present + 5.0)


def test_velocity_limit_scales_with_the_time_between_commands():
    layer = SafetyLayer(SafetyConfig(max_velocity=100.0))
    layer.filter({"a": 0.0}, {"a": 0.0}, now=10.0)
    out = layer.filter({"a": 50.0}, {"a": 0.0}, now=10.1)  # 0.1 s at 100 units/s
    assert out["a"] == pytest.approx(10.0)


def test_commands_outside_the_workspace_hold_the_present_position():
    layer = SafetyLayer(SafetyConfig(workspace=lambda t: t["a"] < 10))
    assert layer.filter({"a": 30.0}, {"a": 4.0}) == {"a": 4.0}


@pytest.mark.parametrize("action", ["hold", "disable_torque"])
def test_watchdog_fires_when_commands_stop(so101_emulator, calibrate_files, action):
    arm = _arm(so101_emulator, calibrate_files("so101_follower"),
               watchdog_timeout_s=0.1, watchdog_action=action)
    with arm:
        arm.send_action({"wrist_flex": 30.0})  # servo 4 starts moving to the new goal
        assert _eventually(lambda: so101_emulator.servos[4].value("Goal_Position") > 2100)
        # Wait for the first firing (however loaded the machine), then for 3 more
        # timeouts: with no command in between, it must not fire again.
        assert _eventually(lambda: arm.watchdog.fired >= 1, timeout_s=10.0)
        time.sleep(0.3)
        assert arm.watchdog.fired == 1
        servo = so101_emulator.servos[4]
        if action == "hold":
            assert servo.torque_enabled
            assert abs(servo.value("Goal_Position") - servo.value("Present_Position")) <= 30
        else:
            assert not any(s.torque_enabled for s in so101_emulator.servos.values())


def test_watchdog_stays_quiet_while_commands_keep_coming(so101_emulator, calibrate_files):
    # Commands come every ~30 ms; the 1 s timeout leaves room for a loaded machine
    # to stall the loop (or a bus retry) without the watchdog firing spuriously.
    with _arm(so101_emulator, calibrate_files("so101_follower"), watchdog_timeout_s=1.0) as arm:
        for _ in range(10):
            arm.send_action({"wrist_flex": 0.0})
            time.sleep(0.03)
        assert arm.watchdog.fired == 0


def test_estop_through_the_api_disables_torque_and_refuses_commands(so101_emulator, calibrate_files):
    with _arm(so101_emulator, calibrate_files("so101_follower"), watchdog_timeout_s=None) as arm:
        arm.estop()
        assert not any(s.torque_enabled for s in so101_emulator.servos.values())
        before = _goals(so101_emulator)
        with pytest.raises(EStopError, match="e-stop is engaged"):
            arm.send_action({"gripper": 90.0})
        time.sleep(0.05)
        assert _goals(so101_emulator) == before
        arm.release_estop()
        assert all(s.torque_enabled for s in so101_emulator.servos.values())
        arm.send_action({"gripper": 55.0})


def test_estop_by_key_stops_the_arm(so101_emulator, calibrate_files):
    read_fd, write_fd = os.pipe()
    with _arm(so101_emulator, calibrate_files("so101_follower"), watchdog_timeout_s=None) as arm:
        key = KeyEStop(arm.estop, key=" ", fd=read_fd).start()
        os.write(write_fd, b"x")
        time.sleep(0.05)
        assert not key.triggered.is_set()
        os.write(write_fd, b" ")
        assert key.triggered.wait(1.0)
        assert arm.safety.estopped
        assert not any(s.torque_enabled for s in so101_emulator.servos.values())
        key.stop()
    os.close(read_fd)
    os.close(write_fd)


def test_sigterm_disables_torque_and_handlers_are_restored_on_disconnect(so101_emulator, calibrate_files):
    previous = signal.getsignal(signal.SIGTERM)
    arm = _arm(so101_emulator, calibrate_files("so101_follower"), watchdog_timeout_s=None)
    arm.connect()
    assert signal.getsignal(signal.SIGTERM) is not previous
    with pytest.raises(SystemExit):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.5)  # the handler runs between bytecodes
    assert not any(s.torque_enabled for s in so101_emulator.servos.values())
    arm.disconnect()
    assert signal.getsignal(signal.SIGTERM) is previous
