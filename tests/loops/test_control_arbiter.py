import pytest

from robot_learn.loops.control import ControlArbiter, Mode, Request


def test_takeover_beats_reset_requested_in_the_same_step():
    arb = ControlArbiter()
    arb.submit(Request.RESET)
    arb.submit(Request.TAKEOVER)
    assert arb.step() is Mode.HUMAN
    assert list(arb.pending) == [Request.RESET]  # waits for the human


def test_reset_waits_for_human_release_then_applies():
    arb = ControlArbiter(Mode.HUMAN)
    arb.submit(Request.RESET)
    assert arb.step() is Mode.HUMAN
    arb.submit(Request.RELEASE)
    assert arb.step() is Mode.RESET


def test_reset_preempts_policy():
    arb = ControlArbiter()
    arb.submit(Request.RESET)
    assert arb.step() is Mode.RESET


def test_takeover_during_reset_is_queued_not_lost():
    arb = ControlArbiter(Mode.RESET)
    arb.submit(Request.TAKEOVER)
    assert arb.step() is Mode.RESET
    assert arb.step() is Mode.RESET
    arb.submit(Request.RESET_DONE)
    assert arb.step() is Mode.HUMAN


def test_pause_wins_from_any_mode_and_only_resume_leaves_it():
    for mode in Mode:
        arb = ControlArbiter(mode)
        arb.submit(Request.TAKEOVER)
        arb.submit(Request.PAUSE)
        assert arb.step() is Mode.PAUSED
    arb.submit(Request.RELEASE)
    assert arb.step() is Mode.PAUSED
    arb.submit(Request.RESUME)
    assert arb.step() is Mode.HUMAN  # resume, then the queued takeover


def test_release_while_policy_drives_is_dropped():
    arb = ControlArbiter()
    arb.submit(Request.RELEASE)
    assert arb.step() is Mode.AUTONOMOUS
    assert arb.dropped == [(Mode.AUTONOMOUS, Request.RELEASE)]
    assert not arb.pending


def test_unknown_request_names_valid_ones():
    with pytest.raises(ValueError, match="unknown control request 'grab'.*takeover"):
        ControlArbiter().submit("grab")
