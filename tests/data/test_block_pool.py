"""Out-of-core sampling: a store bigger than the cache is sampled from whole episodes
held in memory a few blocks at a time (``block_pool``), within the budget, with exact
windows, every block visited, and an exact resume."""

from __future__ import annotations

import json

import numpy as np
import pytest

from episode_builders import make_meta, make_steps
from robot_learn.data import EpisodeStore, StoreError, WindowSampler
from robot_learn.data.prefetch import PrefetchingSampler

KEYS = dict(obs_keys=("state", "images/front"), obs_horizon=2, action_horizon=6)
BUDGET = 12_000  # bytes; the store's arrays take about 50 kB


@pytest.fixture
def big_store(store_path):
    store = EpisodeStore.create(store_path)
    for i in range(24):
        store.append_episode(make_steps(4 + i % 9, seed=i), make_meta(i))
    return store


def _pooled(store, seed=0, **kwargs):
    with pytest.warns(UserWarning, match="blocks of episodes held in memory"):
        return WindowSampler(store, batch_size=8, seed=seed, max_cache_bytes=BUDGET, **KEYS, **kwargs)


def test_windows_from_the_pool_equal_the_windows_in_memory(big_store):
    pooled = _pooled(big_store)
    reference = WindowSampler(big_store, batch_size=8, **KEYS)
    assert reference.cached and not pooled.cached and pooled.pool.num_slots >= 2
    for _ in range(40):  # several swaps
        batch = pooled.sample()
        same = reference.batch_at(batch["episode"], batch["t"])
        for got, want in ((batch["obs"]["images"]["front"], same["obs"]["images"]["front"]),
                          (batch["obs"]["state"], same["obs"]["state"]), (batch["action"], same["action"])):
            np.testing.assert_array_equal(got, want)
        assert batch["instruction"] == same["instruction"]
    assert pooled.pool.loads > pooled.pool.num_slots


def test_the_pool_stays_within_the_cache_budget(big_store):
    pooled = _pooled(big_store)
    held = sum(buf.nbytes for buf in pooled.pool.buffers.values())
    assert held <= BUDGET
    assert len(pooled.pool.blocks) > pooled.pool.num_slots  # the store does not fit


def test_every_window_is_drawn_and_every_block_loaded_within_a_few_cycles(big_store):
    pooled = _pooled(big_store, windows_per_frame=1.0)
    seen, loaded = set(), set()
    for _ in range(400):
        batch = pooled.sample()
        seen.update(zip(batch["episode"].tolist(), batch["t"].tolist()))
        loaded.update(pooled.pool.slot_block)
    lengths = big_store.episode_ends - big_store.episode_starts
    assert loaded == set(range(len(pooled.pool.blocks)))
    assert seen == {(e, t) for e, n in enumerate(lengths.tolist()) for t in range(n)}


def test_more_windows_per_frame_means_fewer_block_loads(big_store):
    few, many = _pooled(big_store, windows_per_frame=4.0), _pooled(big_store, windows_per_frame=0.5)
    for _ in range(60):
        few.sample()
        many.sample()
    assert few.pool.loads < many.pool.loads


def test_state_dict_resumes_the_pool_exactly_through_json(big_store):
    sampler = _pooled(big_store, seed=4)
    for _ in range(7):
        sampler.sample()
    state = json.loads(json.dumps(sampler.state_dict()))
    expected = [sampler.sample() for _ in range(30)]
    resumed = _pooled(big_store, seed=123)
    resumed.load_state_dict(state)
    for want in expected:
        got = resumed.sample()
        np.testing.assert_array_equal(got["obs"]["images"]["front"], want["obs"]["images"]["front"])
        assert got["t"].tolist() == want["t"].tolist()


def test_prefetching_a_pooled_sampler_gives_its_batches_and_rewinds_its_place(big_store):
    plain, ahead = _pooled(big_store), PrefetchingSampler(_pooled(big_store), depth=3)
    try:
        for _ in range(25):
            np.testing.assert_array_equal(ahead.sample()["action"], plain.sample()["action"])
    finally:
        ahead.close()
    np.testing.assert_array_equal(ahead.sampler.sample()["action"], plain.sample()["action"])


@pytest.mark.parametrize("change, message", [
    (lambda s: s["pool"].update(slots=s["pool"]["slots"][:1]), "slots="),
    (lambda s: s["pool"].update(slots=[s["pool"]["slots"][0]] * len(s["pool"]["slots"])), "slots="),
    (lambda s: s["pool"].update(queue=[10_000]), r"queue=\[10000\] does not fit"),
    (lambda s: s["pool"].update(served=10**6), "served=1000000 does not fit"),
    (lambda s: s["pool"].pop("fifo"), "invalid sampler pool state"),
])
def test_a_damaged_pool_state_is_refused_naming_the_field(big_store, change, message):
    sampler = _pooled(big_store)
    state = json.loads(json.dumps(sampler.state_dict()))
    change(state)
    with pytest.raises(StoreError, match=message):
        _pooled(big_store).load_state_dict(state)


def test_a_state_from_another_plan_or_a_cached_sampler_is_not_applied_and_says_so(big_store):
    """Resuming with another cache cap (other blocks) keeps the new pool's own blocks, with a
    warning; a cached sampler's state has no pool place at all."""
    state = json.loads(json.dumps(_pooled(big_store).state_dict()))
    with pytest.warns(UserWarning, match="blocks of episodes"):
        other = WindowSampler(big_store, batch_size=8, max_cache_bytes=BUDGET + 3000, **KEYS)
    assert other.pool.plan != state["pool"]["plan"]
    before = list(other.pool.slot_block)
    with pytest.warns(UserWarning, match="keeps its own blocks"):
        other.load_state_dict(state)
    assert other.pool.slot_block == before
    cached_state = WindowSampler(big_store, **KEYS).state_dict()
    with pytest.warns(UserWarning, match="saved without a pool"):
        _pooled(big_store).load_state_dict(cached_state)
    with pytest.warns(UserWarning, match="holds its arrays in memory"):
        WindowSampler(big_store, **KEYS).load_state_dict(state)


def test_derived_arrays_count_against_the_budget(big_store):
    features = np.zeros((big_store.num_frames, 512), dtype=np.float32)
    with pytest.warns(UserWarning):
        sampler = WindowSampler(big_store, batch_size=8, max_cache_bytes=BUDGET, derived={"feat": features},
                                obs_keys=("state", "feat"), obs_horizon=2, action_horizon=6)
    held = 0 if sampler.pool is None else sum(buf.nbytes for buf in sampler.pool.buffers.values())
    assert not sampler.cached and held <= BUDGET


def test_a_budget_below_two_blocks_reads_from_zarr_with_a_warning(big_store):
    with pytest.warns(UserWarning, match="not two blocks of episodes fit"):
        sampler = WindowSampler(big_store, max_cache_bytes=2_000, **KEYS)
    assert sampler.pool is None and not sampler.cached
    assert sampler.sample()["action"].shape == (64, 6, 5)


@pytest.mark.parametrize("value", [0, -1.0, float("inf"), float("nan"), "2"])
def test_windows_per_frame_must_be_a_finite_positive_number(big_store, value):
    with pytest.raises(StoreError, match="windows_per_frame must be a finite number > 0"):
        WindowSampler(big_store, max_cache_bytes=BUDGET, windows_per_frame=value, **KEYS)
