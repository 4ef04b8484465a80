import numpy as np
import pytest

from robot_learn.critics import FAILURE, IDLE, PROGRESS, RECOVERY, keep_mask, label_steps, segments


def test_rising_flat_falling_and_recovering_curve_is_segmented():
    p = np.concatenate([np.linspace(0, 0.5, 11), np.full(10, 0.5), np.linspace(0.5, 0.2, 7),
                        np.linspace(0.2, 0.5, 7)[1:], np.linspace(0.5, 0.9, 9)[1:]])
    labels = label_steps(p, window=3, eps=0.02)
    names = [s.name for s in segments(labels)]
    assert names[0] == "progress" and "idle" in names and "failure" in names and "recovery" in names
    assert names.index("idle") < names.index("failure") < names.index("recovery")
    # After regaining the earlier best (0.5), rising again is ordinary progress.
    assert labels[-5] == PROGRESS
    assert np.all(labels[12:18] == IDLE)


def test_keep_mask_keeps_progress_and_recovery_only():
    labels = np.array([PROGRESS, IDLE, FAILURE, RECOVERY])
    np.testing.assert_array_equal(keep_mask(labels), [True, False, False, True])


def test_segments_cover_the_episode_in_order():
    labels = np.array([0, 0, 1, 1, 1, 2, 3, 3])
    segs = segments(labels)
    assert [(s.start, s.end) for s in segs] == [(0, 2), (2, 5), (5, 6), (6, 8)]


def test_bad_curve_is_rejected():
    with pytest.raises(ValueError, match="1-D"):
        label_steps(np.zeros((3, 2)))
