"""Wilson interval and summary metrics."""

import pytest

from robot_learn.evaluation import summarize, wilson_interval


@pytest.mark.parametrize("k,n,low,high", [
    # Newcombe (1998), Table I, example: 81/263.
    (81, 263, 0.2553, 0.3662),
    # Textbook values for z = 1.96.
    (5, 10, 0.2366, 0.7634),
    (50, 100, 0.4038, 0.5962),
    (0, 10, 0.0, 0.2775),
    (10, 10, 0.7225, 1.0),
    (1, 50, 0.0035, 0.1050),
])
def test_wilson_interval_matches_published_values(k, n, low, high):
    lo, hi = wilson_interval(k, n)
    assert lo == pytest.approx(low, abs=1e-4)
    assert hi == pytest.approx(high, abs=1e-4)


def test_wilson_interval_is_symmetric_around_half_and_contains_the_rate():
    lo, hi = wilson_interval(3, 20)
    lo2, hi2 = wilson_interval(17, 20)
    assert lo == pytest.approx(1 - hi2) and hi == pytest.approx(1 - lo2)
    assert lo < 3 / 20 < hi


def test_wilson_interval_narrows_with_more_episodes():
    widths = [hi - lo for lo, hi in (wilson_interval(n // 2, n) for n in (10, 50, 200))]
    assert widths[0] > widths[1] > widths[2]


def test_wilson_interval_wider_for_larger_z():
    lo90, hi90 = wilson_interval(7, 20, z=1.645)
    lo95, hi95 = wilson_interval(7, 20)
    assert lo95 < lo90 and hi95 > hi90


def test_wilson_interval_with_no_episodes_is_the_whole_range():
    assert wilson_interval(0, 0) == (0.0, 1.0)


@pytest.mark.parametrize("k,n", [(-1, 5), (6, 5), (0, -1)])
def test_wilson_interval_rejects_impossible_counts(k, n):
    with pytest.raises(ValueError, match=f"k={k}, n={n}"):
        wilson_interval(k, n)


def test_summarize_reports_rate_interval_and_means():
    s = summarize([True, False, True, True], [1.0, 0.5, 1.0, 1.0], [10, 40, 12, 14])
    assert (s.episodes, s.successes) == (4, 3)
    assert s.success_rate == 0.75
    assert (s.ci_low, s.ci_high) == pytest.approx(wilson_interval(3, 4))
    assert s.mean_progress == pytest.approx(0.875)
    assert s.mean_length == pytest.approx(19.0)


def test_summarize_rejects_ragged_inputs():
    with pytest.raises(ValueError, match="equal lengths"):
        summarize([True], [1.0, 0.0], [3])
