"""Operators: sources of actions that can claim and release control of a session."""

from robot_learn.loops.operators.base import Operator, OperatorDisconnected, pose_of
from robot_learn.loops.operators.devices import (
    GamepadOperator, KeyboardOperator, LeaderArmOperator, ReplaySource, SpaceMouseOperator, record_events,
)
from robot_learn.loops.operators.simulated import SimulatedOperator, TakeoverRule, resume_expert

__all__ = ["Operator", "OperatorDisconnected", "pose_of", "GamepadOperator", "KeyboardOperator",
           "LeaderArmOperator", "ReplaySource", "SpaceMouseOperator", "record_events",
           "SimulatedOperator", "TakeoverRule", "resume_expert"]
