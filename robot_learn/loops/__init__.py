"""Improvement loops: HITL sessions (control arbitration, operators, recording) and
rounds of collect -> curate -> train -> evaluate. Composes every layer below it."""

from robot_learn.loops.control import ControlArbiter, Mode, Request
from robot_learn.loops.policy_actor import PolicyActor
from robot_learn.loops.session import DISCONNECT_MARK, EpisodeSummary, HITLSession

__all__ = ["ControlArbiter", "Mode", "Request", "PolicyActor", "DISCONNECT_MARK", "EpisodeSummary", "HITLSession"]
