"""Damage is found, named and never read as data: the corruption matrix at the
library level (the CLI's part is tests/cli/test_store_damage_cli.py).

`small_store` holds episodes of 5, 7, 3 and 6 frames (ends 5, 12, 15, 21): each
low-dim array is one chunk (c/0/0), images/front has 4 frames per chunk (c/0 .. c/5).
"""

from __future__ import annotations

import json
import re
import warnings
import numpy as np
import pytest
import zarr

from episode_builders import make_meta, make_steps, make_version1_store
from robot_learn.data import DamagedStoreError, EpisodeStore, WindowSampler
from robot_learn.data.integrity import verify_store
from store_damage import delete, flip, short_commit, snapshot, truncate

LENGTHS = (5, 7, 3, 6)


# Damage that stops the store from opening at all: (damage, expected message part).
UNOPENABLE = {
    "missing data chunk": (lambda p: delete(p, "data/action/c/0/0"),
                           "array 'data/action' chunk 0 (file data/action/c/0/0, frames 0..20) is missing"),
    "missing episode_ends chunk": (lambda p: delete(p, "meta/episode_ends/c/0"),
                                   "array 'meta/episode_ends' chunk 0 (file meta/episode_ends/c/0, "
                                   "episodes 0..3) is missing"),
    "missing task chunk": (lambda p: delete(p, "meta/task/c/0"), "array 'meta/task' chunk 0"),
    "flipped meta chunk": (lambda p: flip(p, "meta/seed/c/0"), "array 'meta/seed' chunk 0 (file "
                           "meta/seed/c/0, episodes 0..3) does not decode"),
    "commit record short of episode_ends": (short_commit,
                                            "the commit record (episode_store.json) says 20 frames but "
                                            "meta/episode_ends ends at 21"),
}
# Damage to a data chunk the next append rewrites: opens for reading, reads refuse it.
UNDECODABLE = {
    "truncated data chunk": lambda p: truncate(p, "data/action/c/0/0"),
    "flipped data chunk": lambda p: flip(p, "data/action/c/0/0"),
}
ACTION_CHUNK = "array 'data/action' chunk 0 (file data/action/c/0/0, frames 0..20) does not decode"


@pytest.fixture
def damaged_path(small_store, store_path):
    small_store.close()
    return store_path


@pytest.mark.parametrize("kind", UNOPENABLE)
def test_damage_that_stops_opening_is_named_and_nothing_is_written(damaged_path, kind):
    damage, expected = UNOPENABLE[kind]
    damage(damaged_path)
    before = snapshot(damaged_path)
    for mode in ("r", "a"):
        with pytest.raises(DamagedStoreError) as err:
            EpisodeStore.open(damaged_path, mode=mode)
        assert expected in str(err.value) and str(damaged_path) in str(err.value)
        assert "\n" not in str(err.value)
    assert snapshot(damaged_path) == before
    problems = verify_store(damaged_path).problems
    assert len(problems) == 1 and expected in problems[0]


@pytest.mark.parametrize("kind", UNDECODABLE)
def test_undecodable_chunk_is_named_by_every_read_and_by_append(damaged_path, kind):
    UNDECODABLE[kind](damaged_path)
    before = snapshot(damaged_path)
    store = EpisodeStore.open(damaged_path)  # the cheap checks on open pass
    reads = {"read": lambda: store.read("action"), "episode": lambda: store.episode(2),
             "view": lambda: store.view(success=True).read("action"), "stats": lambda: store.stats(["action"]),
             "sampler": lambda: WindowSampler(store, obs_keys=("state",), action_horizon=4)}
    for name, read in reads.items():
        with pytest.raises(DamagedStoreError, match=re.escape(f"is damaged: {ACTION_CHUNK}")) as err:
            read()
        assert "Zstd" in str(err.value) and "\n" not in str(err.value), name
    # The rest of the store still reads, exactly.
    for i, length in enumerate(LENGTHS):
        start, end = store.episode_range(i)
        np.testing.assert_array_equal(store.read("state", start, end), make_steps(length, i)["state"])
    # Appending would rewrite this chunk: refused before anything is written.
    with pytest.raises(DamagedStoreError, match=re.escape(ACTION_CHUNK)):
        EpisodeStore.open(damaged_path, mode="a")
    assert snapshot(damaged_path) == before
    assert [p.split(" does not decode")[0] for p in verify_store(damaged_path).problems] == \
        [ACTION_CHUNK.split(" does not decode")[0]]


def test_damaged_chunk_an_append_does_not_touch_stays_as_it_was(damaged_path):
    chunk = "data/images/front/c/2/0/0/0"  # frames 8..11, inside episode 1
    truncate(damaged_path, chunk)
    damaged_bytes = (damaged_path / chunk).read_bytes()
    with EpisodeStore.open(damaged_path, mode="a") as store:
        assert store.append_episode(make_steps(4, 10), make_meta(4)) == 4
    assert (damaged_path / chunk).read_bytes() == damaged_bytes
    store = EpisodeStore.open(damaged_path)
    with pytest.raises(DamagedStoreError, match="array 'data/images/front' chunk 2 .*frames 8..11"):
        store.episode(1)
    for i in (0, 2, 3):
        np.testing.assert_array_equal(store.episode(i)["steps"]["images/front"],
                                      make_steps(LENGTHS[i], i)["images/front"])
    np.testing.assert_array_equal(store.episode(4)["steps"]["images/front"], make_steps(4, 10)["images/front"])
    problems = verify_store(damaged_path).problems
    assert len(problems) == 1 and "array 'data/images/front' chunk 2" in problems[0]


def test_every_chunk_is_written_even_all_zero_ones(small_store, store_path):
    steps = make_steps(3, 30)
    steps["intervention"][:] = False
    steps["reward"][:] = 0.0
    small_store.close()
    with EpisodeStore.create(store_path.with_name("zeros.zarr")) as store:
        store.append_episode(steps, make_meta(0, round=0, policy_id=""))
        assert (store.path / "data/intervention/c/0").is_file()
        assert (store.path / "data/reward/c/0").is_file()
        assert (store.path / "meta/round/c/0").is_file() and (store.path / "meta/policy_id/c/0").is_file()


def test_chunks_carry_zstd_content_checksums(small_store, store_path):
    root = zarr.open_group(store=str(store_path), mode="r")
    for name in ("data/action", "data/images/front", "meta/task", "meta/episode_ends"):
        codecs = [c.to_dict() for c in root[name].metadata.codecs]
        assert {"name": "zstd", "configuration": {"level": codecs[-1]["configuration"]["level"],
                                                  "checksum": True}} in codecs, name


def test_verify_decodes_every_chunk_of_a_sound_store(small_store, store_path):
    report = small_store.verify()
    assert report.problems == []
    assert report.arrays == 19  # 10 meta arrays + 9 data keys
    assert report.chunks == 10 + 8 + 6  # one per meta and low-dim array, six of images/front
    raw = sum(v.nbytes for i, n in enumerate(LENGTHS) for v in make_steps(n, i).values())
    assert report.decoded_bytes >= raw and report.disk_bytes > 0


def test_version1_store_opens_with_a_warning_and_reads_its_episodes(tmp_path):
    path = tmp_path / "old.zarr"
    episodes = make_version1_store(path, LENGTHS)
    assert not (path / "data/intervention/c/0").exists() or episodes[0]["intervention"].any()
    with pytest.warns(UserWarning, match="written before chunk checksums .format version 1.*cannot be detected"):
        store = EpisodeStore.open(path)
    for i, steps in enumerate(episodes):
        for key, values in steps.items():
            np.testing.assert_array_equal(store.episode(i)["steps"][key], values)
    assert verify_store(path).problems == [] and verify_store(path).version == 1


def test_appending_to_a_version1_store_keeps_it_version1(tmp_path):
    path = tmp_path / "old.zarr"
    make_version1_store(path, LENGTHS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with EpisodeStore.open(path, mode="a") as store:
            store.append_episode(make_steps(4, 10), make_meta(4))
        store = EpisodeStore.open(path)
    assert json.loads((path / "episode_store.json").read_text())["version"] == 1
    np.testing.assert_array_equal(store.episode(4)["steps"]["action"], make_steps(4, 10)["action"])


def test_version1_store_with_lost_episode_ends_is_caught_by_the_consistency_check(tmp_path):
    path = tmp_path / "old.zarr"
    make_version1_store(path, LENGTHS)
    delete(path, "meta/episode_ends/c/0")  # reads back as zeros in a version-1 store
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(DamagedStoreError, match="meta/episode_ends is not strictly increasing at episode 0"):
            EpisodeStore.open(path)


def test_newer_format_versions_are_refused_by_name(small_store, store_path):
    record = json.loads((store_path / "episode_store.json").read_text())
    (store_path / "episode_store.json").write_text(json.dumps({**record, "version": 3}))
    with pytest.raises(Exception, match="episode store version 3 is not supported; this code reads versions 1, 2"):
        EpisodeStore.open(store_path)
