"""The ``Operator`` interface: a source of actions that can claim and release control."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

from robot_learn.loops.control import Mode, Request


class OperatorDisconnected(RuntimeError):
    """The operator's input device went away (unplugged, driver error)."""


@runtime_checkable
class Operator(Protocol):
    """What a HITL session needs from an operator.

    Each control step the session calls ``poll`` (the operator sees the
    observation, the policy's proposed action and the current mode, and returns
    control requests such as ``Request.TAKEOVER``), then, when the mode is
    ``HUMAN``, ``act`` for the action to execute. Either may raise
    :class:`OperatorDisconnected`. ``human_seconds`` counts the time spent in control.
    """

    id: str

    def start_episode(self, robot: Any) -> None: ...

    def poll(self, obs: dict[str, Any], proposed: np.ndarray | None, mode: Mode) -> list[Request]: ...

    def act(self, obs: dict[str, Any]) -> np.ndarray: ...

    def end_episode(self) -> None: ...


def pose_of(obs: dict[str, Any]) -> np.ndarray:
    """The end-effector pose ``[x, y, z, yaw]`` from an observation's ``state`` (entries 6..9)."""
    state = np.asarray(obs["state"], dtype=np.float32)
    if state.shape[-1] < 10:
        raise ValueError(f"observation 'state' has {state.shape[-1]} entries; pose operators need "
                         "the 10-entry task state (6 joints + x, y, z, yaw)")
    return state[6:10].copy()
