"""One writer at a time: a store open for appending holds an OS lock that other
processes' writers respect (error or wait), that readers ignore and that a
killed writer does not leave behind."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from episode_builders import make_meta, make_steps
from robot_learn.data import EpisodeStore, StoreError

# Opens the store for appending, says so, holds it for argv[2] seconds, then (given
# a marker path argv[3]) writes the marker, closes the store and lives on a while.
HOLDER = """
import sys, time
from pathlib import Path
from robot_learn.data import EpisodeStore
store = EpisodeStore.open(sys.argv[1], mode="a")
print("holding", flush=True)
time.sleep(float(sys.argv[2]))
if len(sys.argv) > 3:
    Path(sys.argv[3]).write_text("released")
    store.close()
    time.sleep(60)
"""


def hold(path: Path, seconds: float, *marker: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(path), str(seconds), *map(str, marker)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip()
    assert line == "holding", proc.stderr.read()
    return proc


@pytest.fixture
def held_store(small_store, store_path):
    """`small_store`'s path, open for appending in another process for 60 s."""
    small_store.close()
    proc = hold(store_path, 60)
    yield store_path, proc
    proc.kill()
    proc.wait()


def test_second_writer_gets_clear_error_naming_store_and_holder(held_store):
    path, proc = held_store
    with pytest.raises(StoreError) as err:
        EpisodeStore.open(path, mode="a")
    message = str(err.value)
    assert "\n" not in message
    assert str(path) in message and f"pid {proc.pid}" in message
    assert "wait" in message  # says how to queue instead


def test_creating_over_a_held_path_is_refused_too(held_store):
    path, proc = held_store
    with pytest.raises(StoreError, match=f"pid {proc.pid}"):
        EpisodeStore.open_or_create(path)


def test_readers_do_not_need_the_lock(held_store):
    path, _ = held_store
    store = EpisodeStore.open(path)
    assert store.num_episodes == 4
    np.testing.assert_array_equal(store.episode(1)["steps"]["state"], make_steps(7, 1)["state"])


def test_wait_with_a_time_limit_gives_up_with_a_clear_error(held_store):
    path, proc = held_store
    t0 = time.monotonic()
    with pytest.raises(StoreError, match=rf"pid {proc.pid}\) after waiting 0.3 s"):
        EpisodeStore.open(path, mode="a", wait=0.3)
    assert time.monotonic() - t0 >= 0.3


def test_second_writer_waits_for_the_first_with_wait(small_store, store_path, tmp_path):
    small_store.close()
    released = tmp_path / "released"
    proc = hold(store_path, 1.0, released)
    try:
        with EpisodeStore.open(store_path, mode="a", wait=True) as store:
            assert released.exists()  # written just before the holder let go
            store.append_episode(make_steps(4, 10), make_meta(4))
    finally:
        proc.kill()
        proc.wait()
    assert EpisodeStore.open(store_path).num_episodes == 5


def test_killed_writer_leaves_no_stale_lock(small_store, store_path):
    small_store.close()
    proc = hold(store_path, 60)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    with EpisodeStore.open(store_path, mode="a") as store:  # no wait needed
        store.append_episode(make_steps(4, 10), make_meta(4))
    assert EpisodeStore.open(store_path).num_episodes == 5


def test_closing_releases_the_lock_and_refuses_further_appends(small_store, store_path):
    small_store.close()
    with pytest.raises(StoreError, match="is closed; open it with mode='a'"):
        small_store.append_episode(make_steps(3, 9), make_meta(4))
    proc = subprocess.run([sys.executable, "-c", HOLDER, str(store_path), "0"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "holding" in proc.stdout, proc.stderr


def test_writers_in_one_process_share_the_lock_without_overwriting(small_store, store_path):
    other = EpisodeStore.open(store_path, mode="a")
    assert other.append_episode(make_steps(4, 20), make_meta(4)) == 4
    # small_store still believes the store has 4 episodes; its append must go after.
    assert small_store.append_episode(make_steps(5, 21), make_meta(5)) == 5
    store = EpisodeStore.open(store_path)
    np.testing.assert_array_equal(store.episode(4)["steps"]["state"], make_steps(4, 20)["state"])
    np.testing.assert_array_equal(store.episode(5)["steps"]["state"], make_steps(5, 21)["state"])


def _try_to_append(path: str, queue) -> None:
    try:
        EpisodeStore.open(path, mode="a")
        queue.put("opened")
    except StoreError as err:
        queue.put(str(err))


def test_forked_child_does_not_inherit_the_parents_lock(small_store, store_path):
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_try_to_append, args=(str(store_path), queue))
    child.start()
    child.join(60)
    assert f"pid {os.getpid()}" in queue.get(timeout=5)


@pytest.mark.parametrize("wait", ["yes", -1, None])
def test_bad_wait_values_are_rejected(small_store, store_path, wait):
    small_store.close()
    with pytest.raises(StoreError, match="wait must be true, false or a number of seconds"):
        EpisodeStore.open(store_path, mode="a", wait=wait)


# Each writer appends episodes for its own seeds; a killed or interleaved writer
# would leave an episode whose data does not match its seed.
def _writer(path: str, seeds: list[int]) -> None:
    with EpisodeStore.open_or_create(path, wait=True) as store:
        for seed in seeds:
            store.append_episode(make_steps(3 + seed % 5, seed), make_meta(seed))


def test_two_writer_processes_on_a_new_path_take_turns_with_wait(tmp_path):
    path = str(tmp_path / "shared.zarr")
    ctx = multiprocessing.get_context("spawn")
    seeds = [list(range(0, 8)), list(range(100, 108))]
    procs = [ctx.Process(target=_writer, args=(path, s)) for s in seeds]
    for p in procs:
        p.start()
    for p in procs:
        p.join(300)
        assert p.exitcode == 0
    store = EpisodeStore.open(path)
    stored = [int(s) for s in store.meta["seed"]]
    assert sorted(stored) == sorted(seeds[0] + seeds[1])
    # One writer at a time: each writer's episodes are contiguous, in its order.
    assert stored in (seeds[0] + seeds[1], seeds[1] + seeds[0])
    for i, seed in enumerate(stored):
        want = make_steps(3 + seed % 5, seed)
        got = store.episode(i)["steps"]
        for key in want:
            np.testing.assert_array_equal(got[key], want[key], err_msg=f"episode {i} (seed {seed}) {key}")
