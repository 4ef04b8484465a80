"""Appending is atomic: a writer SIGKILLed mid-append leaves every committed
episode readable and the store appendable."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import zarr

from episode_builders import make_meta, make_steps
from robot_learn.data import EpisodeStore

HERE = Path(__file__).resolve().parent
CAMERAS = ("front", "wrist")

# The writer appends large image episodes forever; the test kills it at random moments.
WRITER = f"""
import sys
sys.path.insert(0, {str(HERE)!r})
from episode_builders import make_meta, make_steps
from robot_learn.data import EpisodeStore
store = EpisodeStore.open(sys.argv[1], mode="a")
print("ready", flush=True)
while True:
    i = store.num_episodes
    store.append_episode(make_steps(40 + (i * 7) % 23, seed=i, cameras={CAMERAS!r}, image_size=96),
                         make_meta(i))
"""


def expected_episode(i: int) -> dict:
    return make_steps(40 + (i * 7) % 23, seed=i, cameras=CAMERAS, image_size=96)


def check_committed(path: Path) -> EpisodeStore:
    store = EpisodeStore.open(path)
    for i in range(store.num_episodes):
        ep = store.episode(i)
        want = expected_episode(i)
        for key, values in want.items():
            np.testing.assert_array_equal(ep["steps"][key], values, err_msg=f"episode {i} {key}")
        assert ep["meta"]["instruction"] == make_meta(i)["instruction"]
    return store


def leftover_rows(path: Path, num_frames: int, num_episodes: int) -> bool:
    """Whether the kill left rows of an uncommitted append in some array."""
    root = zarr.open_group(store=str(path), mode="r")
    # Every array under data/ (images/ among them): a writer killed before its first commit
    # may have made only some of them, or none.
    data = any(isinstance(node, zarr.Array) and node.shape[0] > num_frames
               for _name, node in root["data"].members(max_depth=None))
    return data or any(arr.shape[0] > num_episodes for _n, arr in root["meta"].arrays())


def test_append_is_atomic_when_killed(tmp_path):
    path = tmp_path / "killed.zarr"
    EpisodeStore.create(path)
    rng = np.random.default_rng(1234)
    kills, interrupted = 6, 0
    for kill in range(kills):
        with subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) as proc:
            try:
                ready = proc.stdout.readline().strip()
                time.sleep(rng.uniform(0.05, 0.8))
            finally:
                proc.send_signal(signal.SIGKILL)
                proc.wait(timeout=30)
            errors = proc.stderr.read()
        assert ready == "ready", errors
        assert proc.returncode == -signal.SIGKILL, errors

        store = check_committed(path)
        interrupted += leftover_rows(path, store.num_frames, store.num_episodes)
        # The store takes a new episode right away (from this process) and keeps it;
        # closing it lets the next writer process take the writer lock.
        with EpisodeStore.open(path, mode="a") as appender:
            i = appender.append_episode(expected_episode(appender.num_episodes),
                                        make_meta(appender.num_episodes))
        store = check_committed(path)
        assert store.num_episodes == i + 1
        assert not list(path.rglob("*.partial")), "temp files of the killed writer remain"
    assert store.num_episodes >= kills
    # At least one kill must have landed inside an append, or the test proved nothing.
    assert interrupted >= 1
    print(f'{interrupted}/{kills} kills interrupted an append; {store.num_episodes} episodes')


def test_first_append_replaces_leftovers_of_a_killed_first_append(tmp_path):
    path = tmp_path / "first.zarr"
    EpisodeStore.create(path)
    # What a writer killed inside its first append leaves: data arrays of its
    # schema and grown meta arrays, but no committed episode.
    root = zarr.open_group(store=str(path), mode="r+")
    root["data"].create_array("state", shape=(30, 3), dtype="float32")[:] = 7.0
    root["meta/episode_ends"].resize((1,))
    (path / "data" / "zarr.json.1234.partial").write_text("half a file")
    store = EpisodeStore.open(path, mode="a")
    assert store.num_episodes == 0 and store.keys == ()
    steps = make_steps(5, 0)
    store.append_episode(steps, make_meta(0))
    again = EpisodeStore.open(path)
    assert again.schema["state"]["shape"] == [10]
    np.testing.assert_array_equal(again.episode(0)["steps"]["state"], steps["state"])
    assert not list(path.rglob("*.partial"))
