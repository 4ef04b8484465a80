"""Fixed-rate loop statistics and action-chunk interpolation."""

import time

import numpy as np
import pytest

from robot_learn.hardware import ChunkInterpolator, RateLoop


class SimulatedClock:
    """Time that passes only when the loop sleeps or a step works, plus 1 us per
    reading (a real clock moves between two reads): the schedule comes out exact."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1e-6
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += max(seconds, 0.0)

    work = sleep


def test_slow_steps_are_counted_as_overruns_and_skip_their_missed_slots():
    clock = SimulatedClock()
    # 50 Hz (20 ms slots); steps 3 and 7 work 45 ms, the others 1 ms.
    stats = RateLoop(50, clock=clock, sleep=clock.sleep).run(
        lambda i: clock.work(0.045 if i in (3, 7) else 0.001), iterations=15)
    assert stats.summary()["iterations"] == 15
    assert stats.overruns == 2
    # A slow step ends 25 ms past its deadline: the loop skips the slot it overran and
    # starts the next step on the slot after (60 ms later), instead of bursting.
    expected = [0.02] * 3 + [0.06] + [0.02] * 3 + [0.06] + [0.02] * 6
    np.testing.assert_allclose(stats.periods_s, expected, atol=1e-4)


def test_on_the_real_clock_the_loop_never_runs_ahead_of_its_schedule():
    stats = RateLoop(50).run(lambda i: time.sleep(0.04) if i in (3, 7) else None, iterations=15)
    assert stats.summary()["iterations"] == 15
    # Deadlines are absolute and never move earlier: 14 periods, plus the two slots each
    # 40 ms step overran, take at least 18 x 20 ms however loaded the machine. The
    # overrun count is only a lower bound here: the two 40 ms steps always overrun, and
    # on a loaded machine a late wake-up can overrun another slot (the exact count is
    # tested on a simulated clock above).
    assert sum(stats.periods_s) >= 18 * 0.02 - 1e-3
    assert stats.overruns >= 2


def test_loop_stops_when_step_returns_false():
    stats = RateLoop(100).run(lambda i: i < 4)
    assert stats.summary()["iterations"] == 5


def test_chunk_at_10hz_is_interpolated_linearly_onto_a_30hz_loop():
    interp = ChunkInterpolator(policy_hz=10, loop_hz=30)
    interp.set_chunk(np.array([[0.0, 0.0], [3.0, -3.0], [6.0, -6.0]]))
    out = [interp.next() for _ in range(8)]
    np.testing.assert_allclose([o[0] for o in out], [0, 1, 2, 3, 4, 5, 6, 6])
    np.testing.assert_allclose(out[4], [4.0, -4.0])
    assert interp.exhausted


def test_bad_rate_and_chunk_shapes_are_rejected():
    with pytest.raises(ValueError, match="rate_hz must be in"):
        RateLoop(0)
    with pytest.raises(ValueError, match=r"chunk must be \[H, A\]"):
        ChunkInterpolator(10, 30).set_chunk(np.zeros(4))
