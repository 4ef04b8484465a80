"""PrefetchingSampler: the wrapped sampler's batches, in order, with its place kept exactly."""

from __future__ import annotations

import numpy as np
import pytest

from robot_learn.data import WindowSampler
from robot_learn.data.prefetch import PrefetchingSampler
from store_damage import flip


def _sampler(store, seed=0, **kwargs):
    return WindowSampler(store, obs_keys=("state", "images/front"), action_horizon=4, batch_size=5, seed=seed,
                         **kwargs)


def _same(a, b):
    np.testing.assert_array_equal(a["action"], b["action"])
    np.testing.assert_array_equal(a["obs"]["images"]["front"], b["obs"]["images"]["front"])
    np.testing.assert_array_equal(a["t"], b["t"])


def test_batches_are_the_samplers_own_in_order(small_store):
    plain, ahead = _sampler(small_store), PrefetchingSampler(_sampler(small_store), depth=3)
    try:
        for _ in range(12):
            _same(ahead.sample(), plain.sample())
        assert ahead.batch_size == 5 and len(ahead) == len(plain)  # the sampler's own attributes
    finally:
        ahead.close()


def test_the_state_is_the_place_of_the_next_batch_not_of_the_queued_ones(small_store):
    plain, ahead = _sampler(small_store), PrefetchingSampler(_sampler(small_store), depth=4)
    for _ in range(3):
        ahead.sample()
        plain.sample()
    state = ahead.state_dict()  # the thread has drawn further by now
    assert state == plain.state_dict()
    resumed = PrefetchingSampler(_sampler(small_store, seed=99), depth=2)
    resumed.load_state_dict(state)
    try:
        for _ in range(4):
            _same(resumed.sample(), plain.sample())
    finally:
        resumed.close()
    # close() rewinds the wrapped sampler to the batch not yet handed out.
    ahead.close()
    _same(ahead.sampler.sample(), _sampler_after(small_store, 3))


def _sampler_after(store, n):
    s = _sampler(store)
    for _ in range(n):
        s.sample()
    return s.sample()


def test_an_error_in_the_thread_is_raised_by_sample_as_the_sampler_raises_it(small_store, store_path):
    plain = _sampler(small_store, cache=False)
    flip(store_path, "data/action/c/0/0")  # every batch reads it
    with pytest.raises(Exception) as direct:
        plain.sample()
    ahead = PrefetchingSampler(_sampler(small_store, cache=False), depth=2)
    with pytest.raises(type(direct.value), match=str(direct.value).split(":")[0]):
        ahead.sample()
    assert ahead._thread is None  # stopped, nothing left running


@pytest.mark.parametrize("depth", [0, -1, True, 1.5])
def test_a_bad_depth_is_refused(small_store, depth):
    with pytest.raises(ValueError, match=rf"prefetch depth must be an int >= 1, got {depth!r}"):
        PrefetchingSampler(_sampler(small_store), depth=depth)
