"""Demos recorded in worker threads: the same store as one env gives, errors in order, threads stopped."""

import threading
import time

import numpy as np
import pytest

from robot_learn.data import EpisodeStore
from robot_learn.envs.demos import collect_demos
from robot_learn.envs.episode_threads import episodes_in_order


def test_two_workers_store_what_one_stores_episode_for_episode(tmp_path):
    # noise makes the expert fail sometimes: failures are kept, so both outcomes are compared
    kwargs = dict(noise=1.0, seed=3, cameras=("front",), image_size=48, keep_failures=True, progress_bar=False)
    one = collect_demos("bin_place", 5, tmp_path / "one.zarr", workers=1, **kwargs)
    two = collect_demos("bin_place", 5, tmp_path / "two.zarr", workers=2, **kwargs)
    assert (one.stored, one.successes) == (two.stored, two.successes) == (5, one.successes)
    a, b = EpisodeStore.open(tmp_path / "one.zarr", mode="r"), EpisodeStore.open(tmp_path / "two.zarr", mode="r")
    assert list(a.meta["seed"]) == list(b.meta["seed"]) == [3, 4, 5, 6, 7]
    assert list(a.meta["success"]) == list(b.meta["success"])
    assert set(a.schema) == set(b.schema) and "images/front" in a.schema
    for key in a.schema:
        assert np.array_equal(a.read(key), b.read(key)), key


class Env:
    def __init__(self, made_on):
        self.thread = threading.current_thread().name
        made_on.append(self.thread)
        self.closed_on = None

    def close(self):
        self.closed_on = threading.current_thread().name


def test_an_error_in_one_episode_comes_after_every_earlier_one_and_each_env_closes_on_its_thread():
    made_on, envs = [], []

    def make():
        env = Env(made_on)
        envs.append(env)
        return env

    def record(env, i):
        if i == 3:
            raise RuntimeError("episode 3 failed")
        return i

    got = []
    with pytest.raises(RuntimeError, match="episode 3 failed"):
        for value in episodes_in_order(make, record, 10, workers=2):
            got.append(value)
    assert got == [0, 1, 2]
    assert len(envs) == 2 and all(env.closed_on == env.thread for env in envs)
    assert not [t for t in threading.enumerate() if t.name.startswith("episodes-")]


def test_an_env_that_cannot_be_made_stops_the_run_at_once_even_while_another_worker_keeps_up():
    """The second worker's env fails while the first records episodes faster than the reader takes
    them: the reader gets the error at its next episode, not after the first worker has recorded
    every episode alone (which it did before this was fixed)."""
    calls = []

    def make():
        calls.append(1)
        if len(calls) == 2:
            time.sleep(0.05)
            raise RuntimeError("no EGL display")
        return Env([])

    got = []
    with pytest.raises(RuntimeError, match="no EGL display"):
        for value in episodes_in_order(make, lambda env, i: i, 60, workers=2):
            got.append(value)
            time.sleep(0.01)  # the reader writes the store
    assert got == list(range(len(got))) and len(got) < 20
    assert not [t for t in threading.enumerate() if t.name.startswith("episodes-")]


def test_no_more_workers_than_episodes_make_envs():
    made = []
    assert list(episodes_in_order(lambda: made.append(1) or Env([]), lambda env, i: i, 2, workers=4)) == [0, 1]
    assert len(made) == 2


def test_leaving_early_stops_the_threads_and_one_worker_uses_the_callers_env():
    made = []
    recorded = episodes_in_order(lambda: made.append(1) or Env([]), lambda env, i: i, 100, workers=2)
    assert [next(recorded) for _ in range(3)] == [0, 1, 2]
    recorded.close()
    assert not [t for t in threading.enumerate() if t.name.startswith("episodes-")]
    mine = Env([])
    assert list(episodes_in_order(lambda: pytest.fail("made an env"), lambda env, i: (env, i), 2, 1, env=mine)) \
        == [(mine, 0), (mine, 1)]
    assert mine.closed_on is None  # the caller's env is the caller's to close


def test_zero_workers_is_refused_before_any_store_is_made(tmp_path):
    with pytest.raises(ValueError, match="workers must be >= 1, got 0"):
        collect_demos("bin_place", 2, tmp_path / "none.zarr", workers=0, cameras=(), progress_bar=False)
    assert not (tmp_path / "none.zarr").exists()
