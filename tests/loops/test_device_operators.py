import numpy as np
import pytest

from robot_learn.loops.control import Mode, Request
from robot_learn.loops.operators import (
    GamepadOperator, KeyboardOperator, OperatorDisconnected, ReplaySource, SpaceMouseOperator, record_events,
)

OBS = {"state": np.array([0, 0, 0, 0, 0, 0, 0.2, 0.0, 0.1, 0.0], dtype=np.float32)}


def test_keyboard_replay_takes_over_moves_and_hands_back(tmp_path):
    path = tmp_path / "keys.jsonl"
    record_events([{"step": 0, "type": "key_down", "key": "space"}, {"step": 0, "type": "key_down", "key": "w"},
                   {"step": 0, "type": "key_down", "key": "g"}, {"step": 2, "type": "key_up", "key": "w"},
                   {"step": 3, "type": "key_down", "key": "space"}], path)
    op = KeyboardOperator(ReplaySource(path), linear_speed=0.01)
    assert op.poll(OBS, None, Mode.AUTONOMOUS) == [Request.TAKEOVER]
    a1 = op.act(OBS)
    assert op.poll(OBS, None, Mode.HUMAN) == []
    a2 = op.act(OBS)
    op.poll(OBS, None, Mode.HUMAN)  # w released
    a3 = op.act(OBS)
    np.testing.assert_allclose([a1[0], a2[0], a3[0]], [0.21, 0.22, 0.22], atol=1e-6)
    assert a1[4] == 1.0  # gripper toggled closed
    assert op.poll(OBS, None, Mode.HUMAN) == [Request.RELEASE]


def test_gamepad_replay_maps_sticks_with_deadzone_and_buttons():
    op = GamepadOperator(ReplaySource([{"step": 0, "type": "button_down", "button": 0},
                                       {"step": 0, "type": "axis", "axis": 1, "value": -1.0},
                                       {"step": 0, "type": "axis", "axis": 0, "value": 0.05},
                                       {"step": 1, "type": "button_down", "button": 7}]), linear_speed=0.01)
    assert op.poll(OBS, None, Mode.AUTONOMOUS) == [Request.TAKEOVER]
    action = op.act(OBS)
    np.testing.assert_allclose(action[:2], [0.21, 0.0], atol=1e-6)  # stick up = +x; tiny y is deadzone
    assert op.poll(OBS, None, Mode.HUMAN) == [Request.PAUSE]


def test_spacemouse_replay_drives_all_axes():
    op = SpaceMouseOperator(ReplaySource([{"step": 0, "type": "motion", "x": 0.5, "y": -0.5, "z": 1.0, "yaw": 2.0},
                                          {"step": 0, "type": "button_down", "button": 0}]),
                            linear_speed=0.02, yaw_speed=0.1)
    assert op.poll(OBS, None, Mode.AUTONOMOUS) == [Request.TAKEOVER]
    np.testing.assert_allclose(op.act(OBS)[:4], [0.21, -0.01, 0.12, 0.1], atol=1e-6)


def test_disconnect_event_raises_operator_disconnected_and_stays_disconnected():
    op = KeyboardOperator(ReplaySource([{"step": 1, "type": "disconnect"}]))
    op.poll(OBS, None, Mode.AUTONOMOUS)
    with pytest.raises(OperatorDisconnected, match="keyboard: device disconnected"):
        op.poll(OBS, None, Mode.AUTONOMOUS)
    with pytest.raises(OperatorDisconnected):
        op.poll(OBS, None, Mode.AUTONOMOUS)


def test_recorded_event_without_step_is_rejected():
    with pytest.raises(ValueError, match="needs 'step' and 'type'"):
        ReplaySource([{"type": "key_down", "key": "w"}])


def test_live_keyboard_without_pygame_says_what_to_install():
    try:
        import pygame  # noqa: F401
        pytest.skip("pygame is installed")
    except ImportError:
        pass
    with pytest.raises(ImportError, match="keyboard operator needs the 'pygame' package"):
        KeyboardOperator()
