"""Improvement loops: HITL sessions (control arbitration, operators, recording) and
rounds of collect -> curate -> train -> evaluate, one file per method (``hgdagger``,
``help_curated``, ``recap``, ``autonomous``; registered in :mod:`.methods`) on the
shared driver (:mod:`.round`), sources (:mod:`.sources`) and fine-tuning modes
(:mod:`.finetune`). Composes every layer below it."""

from robot_learn.loops.control import ControlArbiter, Mode, Request
from robot_learn.loops.policy_actor import PolicyActor
from robot_learn.loops.session import (DISCONNECT_MARK, OPERATOR_PAUSE_MARK, POLICY_FAULT_MARK, EpisodeSummary,
                                       HITLSession)

__all__ = ["ControlArbiter", "Mode", "Request", "PolicyActor", "DISCONNECT_MARK", "OPERATOR_PAUSE_MARK", "POLICY_FAULT_MARK",
           "EpisodeSummary", "HITLSession"]
