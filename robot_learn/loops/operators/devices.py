"""Human operators on input devices: keyboard, gamepad, SpaceMouse and a leader arm.

Each device operator reads a stream of input events, one list per control step.
Live streams come from pygame (keyboard, gamepad) or pyspacemouse, imported only
when a live source is built; a :class:`ReplaySource` plays back a recorded
stream, which is how the operators are tested without devices.

Event dicts (as recorded, JSON-able):
- keyboard: ``{"type": "key_down" | "key_up", "key": "w"}``;
- gamepad: ``{"type": "axis", "axis": 0, "value": -0.5}``, ``{"type": "button_down", "button": 0}``;
- SpaceMouse: ``{"type": "motion", "x": .., "y": .., "z": .., "yaw": ..}``, ``{"type": "button_down", "button": 0}``;
- any device: ``{"type": "disconnect"}`` (unplugged) -> :class:`OperatorDisconnected`.

Pose operators command ``[x, y, z, yaw, gripper]`` by integrating a velocity
from the pose the robot is at when they take over.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from robot_learn.loops.control import Mode, Request
from robot_learn.loops.operators.base import OperatorDisconnected, pose_of

Event = dict[str, Any]


class ReplaySource:
    """Replays recorded events: ``events`` is a list of dicts with a ``"step"`` key
    (control step, counted from the first poll), or a JSON-lines file of them."""

    def __init__(self, events: Sequence[Event] | str | Path) -> None:
        if isinstance(events, (str, Path)):
            lines = Path(events).read_text().splitlines()
            events = [json.loads(line) for line in lines if line.strip()]
        self._by_step: dict[int, list[Event]] = {}
        for event in events:
            if "step" not in event or "type" not in event:
                raise ValueError(f"recorded event {event!r} needs 'step' and 'type'")
            self._by_step.setdefault(int(event["step"]), []).append(event)
        self.step = 0

    def __call__(self) -> list[Event]:
        events = self._by_step.get(self.step, [])
        self.step += 1
        return events


class DeviceOperator:
    """Common logic of pose-commanding device operators (see the module docstring)."""

    def __init__(self, source: Callable[[], list[Event]], operator_id: str, linear_speed: float = 0.02,
                 yaw_speed: float = 0.1) -> None:
        self.source = source
        self.id = operator_id
        self.linear_speed = float(linear_speed)  # m per step at full deflection
        self.yaw_speed = float(yaw_speed)        # rad per step at full deflection
        self.velocity = np.zeros(4, dtype=np.float32)  # dx, dy, dz, dyaw in [-1, 1]
        self.gripper = 0.0
        self.target: np.ndarray | None = None
        self.connected = True

    def start_episode(self, robot: Any) -> None:
        self.target = None

    def end_episode(self) -> None:
        self.target = None

    def poll(self, obs: dict[str, Any], proposed: np.ndarray | None, mode: Mode) -> list[Request]:
        if not self.connected:
            raise OperatorDisconnected(f"{self.id}: device is disconnected")
        requests: list[Request] = []
        for event in self.source():
            if event.get("type") == "disconnect":
                self.connected = False
                raise OperatorDisconnected(f"{self.id}: device disconnected mid-episode")
            requests += self.handle(event, mode)
        if mode is not Mode.HUMAN:
            self.target = None  # re-anchor on the robot's pose at the next takeover
        return requests

    def handle(self, event: Event, mode: Mode) -> list[Request]:
        """Update the velocity/gripper from one event; return control requests."""
        raise NotImplementedError

    def act(self, obs: dict[str, Any]) -> np.ndarray:
        if self.target is None:
            self.target = pose_of(obs)
        step = self.velocity * np.array([self.linear_speed] * 3 + [self.yaw_speed], dtype=np.float32)
        self.target = self.target + step
        return np.append(self.target, self.gripper).astype(np.float32)


def _toggle(mode: Mode) -> list[Request]:
    return [Request.RELEASE] if mode is Mode.HUMAN else [Request.TAKEOVER]


class KeyboardOperator(DeviceOperator):
    """Keys: space takes over / hands back; w/s, a/d, q/e move x, y, z; z/x turn;
    g toggles the gripper; p pauses, o resumes; r asks for a scene reset."""

    AXES = {"w": (0, 1), "s": (0, -1), "a": (1, 1), "d": (1, -1), "q": (2, 1), "e": (2, -1),
            "z": (3, 1), "x": (3, -1)}

    def __init__(self, source: Callable[[], list[Event]] | None = None, operator_id: str = "keyboard",
                 **kwargs: Any) -> None:
        super().__init__(source or PygameKeyboardSource(), operator_id, **kwargs)

    def handle(self, event: Event, mode: Mode) -> list[Request]:
        kind, key = event.get("type"), str(event.get("key", ""))
        if kind == "key_up" and key in self.AXES:
            axis, _ = self.AXES[key]
            self.velocity[axis] = 0.0
        if kind != "key_down":
            return []
        if key in self.AXES:
            axis, sign = self.AXES[key]
            self.velocity[axis] = sign
            return []
        if key == "g":
            self.gripper = 1.0 - self.gripper
            return []
        commands = {"space": lambda: _toggle(mode), "p": lambda: [Request.PAUSE],
                    "o": lambda: [Request.RESUME], "r": lambda: [Request.RESET]}
        return commands[key]() if key in commands else []


class GamepadOperator(DeviceOperator):
    """Left stick x/y (axes 0, 1), right stick z/yaw (axes 3, 2); button 0 takes over /
    hands back, button 1 toggles the gripper, button 7 (start) pauses, 6 resumes."""

    AXIS_MAP = {1: (0, -1.0), 0: (1, -1.0), 3: (2, -1.0), 2: (3, -1.0)}  # stick up = +x, left = +y
    DEADZONE = 0.1

    def __init__(self, source: Callable[[], list[Event]] | None = None, operator_id: str = "gamepad",
                 **kwargs: Any) -> None:
        super().__init__(source or PygameJoystickSource(), operator_id, **kwargs)

    def handle(self, event: Event, mode: Mode) -> list[Request]:
        kind = event.get("type")
        if kind == "axis" and int(event["axis"]) in self.AXIS_MAP:
            axis, sign = self.AXIS_MAP[int(event["axis"])]
            value = float(event["value"])
            self.velocity[axis] = 0.0 if abs(value) < self.DEADZONE else sign * value
            return []
        if kind == "button_down":
            button = int(event["button"])
            if button == 0:
                return _toggle(mode)
            if button == 1:
                self.gripper = 1.0 - self.gripper
            if button == 7:
                return [Request.PAUSE]
            if button == 6:
                return [Request.RESUME]
        return []


class SpaceMouseOperator(DeviceOperator):
    """6-DoF puck: translation drives x, y, z, twist drives yaw; left button takes over /
    hands back, right button toggles the gripper."""

    def __init__(self, source: Callable[[], list[Event]] | None = None, operator_id: str = "spacemouse",
                 **kwargs: Any) -> None:
        super().__init__(source or SpaceMouseSource(), operator_id, **kwargs)

    def handle(self, event: Event, mode: Mode) -> list[Request]:
        kind = event.get("type")
        if kind == "motion":
            self.velocity[:] = [float(event.get(k, 0.0)) for k in ("x", "y", "z", "yaw")]
            np.clip(self.velocity, -1.0, 1.0, out=self.velocity)
            return []
        if kind == "button_down":
            if int(event["button"]) == 0:
                return _toggle(mode)
            self.gripper = 1.0 - self.gripper
        return []


class LeaderArmOperator:
    """A leader arm (anything with ``get_action() -> {joint: position}``, e.g. a
    ``ServoArm``) commanding joint targets; for robots in joint action mode.

    ``buttons`` (an event source, e.g. a keyboard or a pedal replay) takes over and
    hands back with ``space``; bus errors of the leader become :class:`OperatorDisconnected`.
    """

    def __init__(self, leader: Any, joint_names: Sequence[str], buttons: Callable[[], list[Event]],
                 operator_id: str = "leader_arm") -> None:
        self.leader = leader
        self.joint_names = tuple(joint_names)
        self.buttons = buttons
        self.id = operator_id

    def start_episode(self, robot: Any) -> None:
        pass

    def end_episode(self) -> None:
        pass

    def poll(self, obs: dict[str, Any], proposed: np.ndarray | None, mode: Mode) -> list[Request]:
        requests: list[Request] = []
        for event in self.buttons():
            if event.get("type") == "disconnect":
                raise OperatorDisconnected(f"{self.id}: button device disconnected")
            if event.get("type") == "key_down" and event.get("key") == "space":
                requests += _toggle(mode)
        return requests

    def act(self, obs: dict[str, Any]) -> np.ndarray:
        from robot_learn.hardware.errors import ServoBusError

        try:
            command = self.leader.get_action()
        except ServoBusError as err:
            raise OperatorDisconnected(f"{self.id}: {err}") from err
        return np.array([command[name] for name in self.joint_names], dtype=np.float32)


# ----- live sources (lazy device imports) ----------------------------------------------
def _require(module: str, extra: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise ImportError(f"the {extra} operator needs the '{module}' package (pip install {module}); "
                          "it is imported only for live devices") from None


class PygameKeyboardSource:
    """Keyboard events from a small pygame window (it must have focus)."""

    def __init__(self) -> None:
        self.pygame = _require("pygame", "keyboard")
        self.pygame.init()
        self.pygame.display.set_mode((240, 80))
        self.pygame.display.set_caption("robot-learn HITL: space = take over")

    def __call__(self) -> list[Event]:
        pg, out = self.pygame, []
        for event in pg.event.get():
            if event.type in (pg.KEYDOWN, pg.KEYUP):
                out.append({"type": "key_down" if event.type == pg.KEYDOWN else "key_up",
                            "key": pg.key.name(event.key)})
            elif event.type == pg.QUIT:
                out.append({"type": "disconnect"})
        return out


class PygameJoystickSource:
    """Gamepad events of joystick ``index`` through pygame."""

    def __init__(self, index: int = 0) -> None:
        pg = self.pygame = _require("pygame", "gamepad")
        pg.init()
        pg.joystick.init()
        if pg.joystick.get_count() <= index:
            raise OperatorDisconnected(f"no gamepad at index {index}; "
                                       f"{pg.joystick.get_count()} connected")
        self.joystick = pg.joystick.Joystick(index)

    def __call__(self) -> list[Event]:
        pg, out = self.pygame, []
        for event in pg.event.get():
            if event.type == pg.JOYAXISMOTION:
                out.append({"type": "axis", "axis": event.axis, "value": float(event.value)})
            elif event.type == pg.JOYBUTTONDOWN:
                out.append({"type": "button_down", "button": event.button})
            elif event.type == getattr(pg, "JOYDEVICEREMOVED", -1):
                out.append({"type": "disconnect"})
        return out


class SpaceMouseSource:
    """SpaceMouse state through pyspacemouse, turned into motion/button events."""

    def __init__(self) -> None:
        self.lib = _require("pyspacemouse", "SpaceMouse")
        if not self.lib.open():
            raise OperatorDisconnected("no SpaceMouse found")
        self._buttons: list[int] = []

    def __call__(self) -> list[Event]:
        try:
            state = self.lib.read()
        except OSError:
            return [{"type": "disconnect"}]
        out: list[Event] = [{"type": "motion", "x": state.y, "y": -state.x, "z": state.z, "yaw": -state.yaw}]
        buttons = list(state.buttons)
        for i, pressed in enumerate(buttons):
            if pressed and not (i < len(self._buttons) and self._buttons[i]):
                out.append({"type": "button_down", "button": i})
        self._buttons = buttons
        return out


def record_events(events: Iterable[Event], path: str | Path) -> None:
    """Write events (with ``"step"``) as JSON lines, the format :class:`ReplaySource` reads."""
    Path(path).write_text("".join(json.dumps(e) + "\n" for e in events))
