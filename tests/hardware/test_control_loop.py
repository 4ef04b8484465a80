"""Fixed-rate loop statistics and action-chunk interpolation."""

import time

import numpy as np
import pytest

from robot_learn.hardware import ChunkInterpolator, RateLoop


def test_loop_runs_at_its_rate_and_counts_overruns():
    stats = RateLoop(50).run(lambda i: time.sleep(0.04) if i in (3, 7) else None, iterations=15)
    summary = stats.summary()
    assert summary["iterations"] == 15
    assert summary["overruns"] == 2
    assert stats.periods_s and min(stats.periods_s) > 0.015


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
