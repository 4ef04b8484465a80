"""WindowSampler: edge-padded windows inside one episode, determinism and resume."""

from __future__ import annotations

import json

import numpy as np
import pytest

from episode_builders import make_meta, make_steps
from robot_learn.data import EpisodeStore, StoreError, WindowSampler

LENGTHS = (5, 7, 3, 6)  # small_store


@pytest.fixture
def tagged_store(store_path):
    """state[:, 0] = episode, state[:, 1] = step; action[:, 0] = episode, action[:, 1] = step."""
    store = EpisodeStore.create(store_path)
    for i, length in enumerate((4, 1, 9, 2, 6, 3)):
        steps = make_steps(length, i)
        steps["state"][:, 0], steps["state"][:, 1] = i, np.arange(length)
        steps["action"][:, 0], steps["action"][:, 1] = i, np.arange(length)
        store.append_episode(steps, make_meta(i, source="rollout" if i % 2 else "demo"))
    return store


def test_window_at_episode_start_repeats_the_first_step(small_store):
    sampler = WindowSampler(small_store, obs_keys=("state", "images/front"), obs_horizon=2,
                            action_horizon=4)
    ep = make_steps(7, seed=1)  # episode 1
    batch = sampler.batch_at([1], [0])
    # obs steps t-1..t = -1, 0 -> 0, 0; action steps t-1..t+2 = -1..2 -> 0, 0, 1, 2
    np.testing.assert_array_equal(batch["obs"]["state"][0], ep["state"][[0, 0]])
    np.testing.assert_array_equal(batch["obs"]["images"]["front"][0], ep["images/front"][[0, 0]])
    np.testing.assert_array_equal(batch["action"][0], ep["action"][[0, 0, 1, 2]])


def test_window_at_episode_end_repeats_the_last_step(small_store):
    sampler = WindowSampler(small_store, obs_keys=("state",), obs_horizon=3, action_horizon=5)
    ep = make_steps(7, seed=1)
    batch = sampler.batch_at([1, 1], [6, 5])
    # t=6: obs 4,5,6; action 4..8 -> 4,5,6,6,6.  t=5: obs 3,4,5; action 3..7 -> 3,4,5,6,6
    np.testing.assert_array_equal(batch["obs"]["state"][0], ep["state"][[4, 5, 6]])
    np.testing.assert_array_equal(batch["action"][0], ep["action"][[4, 5, 6, 6, 6]])
    np.testing.assert_array_equal(batch["obs"]["state"][1], ep["state"][[3, 4, 5]])
    np.testing.assert_array_equal(batch["action"][1], ep["action"][[3, 4, 5, 6, 6]])


def test_batch_has_contract_shapes_dtypes_and_instructions(small_store):
    sampler = WindowSampler(small_store, obs_keys=("state", "env_state", "images/front"),
                            obs_horizon=2, action_horizon=16, batch_size=8, seed=3)
    batch = sampler.sample()
    assert batch["obs"]["state"].shape == (8, 2, 10) and batch["obs"]["state"].dtype == np.float32
    assert batch["obs"]["env_state"].shape == (8, 2, 14)
    assert batch["obs"]["images"]["front"].shape == (8, 2, 8, 8, 3)
    assert batch["obs"]["images"]["front"].dtype == np.uint8
    assert batch["action"].shape == (8, 16, 5) and batch["action"].dtype == np.float32
    assert batch["episode"].dtype.kind == "i" and batch["t"].dtype.kind == "i"
    assert batch["instruction"] == [make_meta(int(e))["instruction"] for e in batch["episode"]]


def test_windows_never_cross_episodes_and_match_the_clamp_rule(tagged_store):
    sampler = WindowSampler(tagged_store, obs_horizon=3, action_horizon=8, batch_size=256, seed=0)
    lengths = tagged_store.episode_ends - tagged_store.episode_starts
    for _ in range(5):
        batch = sampler.sample()
        ep, t = batch["episode"], batch["t"]
        last = lengths[ep][:, None] - 1
        assert (batch["obs"]["state"][..., 0] == ep[:, None]).all()
        assert (batch["action"][..., 0] == ep[:, None]).all()
        np.testing.assert_array_equal(batch["obs"]["state"][..., 1],
                                      np.clip(t[:, None] + np.arange(3) - 2, 0, last))
        np.testing.assert_array_equal(batch["action"][..., 1],
                                      np.clip(t[:, None] + np.arange(8) - 2, 0, last))


def test_every_step_of_every_episode_is_an_anchor(tagged_store):
    sampler = WindowSampler(tagged_store, batch_size=2000, seed=1)
    assert len(sampler) == tagged_store.num_frames
    batch = sampler.sample()
    seen = set(zip(batch["episode"].tolist(), batch["t"].tolist()))
    lengths = tagged_store.episode_ends - tagged_store.episode_starts
    assert seen == {(e, t) for e, n in enumerate(lengths.tolist()) for t in range(n)}


@pytest.mark.parametrize("cache", [True, False])
def test_anchor_every_draws_only_the_steps_where_a_chunked_policy_chose(tagged_store, cache):
    """Episode lengths 4, 1, 9, 2, 6, 3 and k = 3: anchors 0, 3 | 0 | 0, 3, 6 | 0 | 0, 3 | 0; each
    window is still the whole clamped window around its anchor."""
    sampler = WindowSampler(tagged_store, batch_size=2000, seed=1, anchor_every=3, cache=cache)
    assert len(sampler) == 10
    batch = sampler.sample()
    assert set(zip(batch["episode"].tolist(), batch["t"].tolist())) == {
        (0, 0), (0, 3), (1, 0), (2, 0), (2, 3), (2, 6), (3, 0), (4, 0), (4, 3), (5, 0)}
    assert (batch["action"][:, -1, 1] >= batch["t"]).all()  # the actions run on past the anchor
    with pytest.raises(StoreError, match="anchor_every must be a positive int, got 0"):
        WindowSampler(tagged_store, anchor_every=0)


def test_sampler_on_a_view_draws_only_its_episodes(tagged_store):
    view = tagged_store.view(source="rollout")
    sampler = WindowSampler(view, batch_size=500, seed=2)
    batch = sampler.sample()
    assert set(batch["episode"].tolist()) == {1, 3, 5}
    assert (batch["obs"]["state"][..., 0] == batch["episode"][:, None]).all()
    assert len(sampler) == 1 + 2 + 3


def test_uncached_sampler_reads_the_same_windows_from_zarr(small_store):
    kwargs = dict(obs_keys=("state", "images/front"), obs_horizon=2, action_horizon=6,
                  batch_size=32, seed=5)
    cached = WindowSampler(small_store.view(success=True), cache=True, **kwargs)
    direct = WindowSampler(small_store.view(success=True), cache=False, **kwargs)
    assert cached.cached and not direct.cached
    for _ in range(3):
        a, b = cached.sample(), direct.sample()
        np.testing.assert_array_equal(a["obs"]["images"]["front"], b["obs"]["images"]["front"])
        np.testing.assert_array_equal(a["obs"]["state"], b["obs"]["state"])
        np.testing.assert_array_equal(a["action"], b["action"])


def test_sampler_falls_back_to_zarr_when_arrays_exceed_the_cache_limit(small_store):
    with pytest.warns(UserWarning, match="exceeds max_cache_bytes"):
        sampler = WindowSampler(small_store, obs_keys=("images/front",), max_cache_bytes=100)
    assert not sampler.cached


def test_same_seed_gives_same_batches_and_other_seed_differs(small_store):
    a, b, c = (WindowSampler(small_store, batch_size=16, seed=s) for s in (7, 7, 8))
    for _ in range(3):
        ba, bb, bc = a.sample(), b.sample(), c.sample()
        np.testing.assert_array_equal(ba["action"], bb["action"])
        assert ba["t"].tolist() == bb["t"].tolist()
    assert not np.array_equal(ba["action"], bc["action"])


def test_state_dict_resumes_exactly_through_json(small_store):
    sampler = WindowSampler(small_store, batch_size=16, seed=11)
    for _ in range(3):
        sampler.sample()
    state = json.loads(json.dumps(sampler.state_dict()))
    expected = [sampler.sample() for _ in range(4)]
    resumed = WindowSampler(small_store, batch_size=16, seed=999)
    resumed.load_state_dict(state)
    for want in expected:
        got = resumed.sample()
        np.testing.assert_array_equal(got["action"], want["action"])
        assert got["episode"].tolist() == want["episode"].tolist()


def test_bad_sampler_arguments_are_named(small_store):
    with pytest.raises(StoreError, match="unknown key 'stat'; store keys: action"):
        WindowSampler(small_store, obs_keys=("stat",))
    with pytest.raises(StoreError, match="obs_horizon must be a positive int, got 0"):
        WindowSampler(small_store, obs_horizon=0)
    with pytest.raises(StoreError, match="no episodes"):
        WindowSampler(small_store.view(source="teleop"))
    with pytest.raises(StoreError, match="invalid sampler state_dict"):
        WindowSampler(small_store).load_state_dict({"bit_generator": {"bit_generator": "MT19937"}})
    with pytest.raises(StoreError, match="out of range"):
        WindowSampler(small_store).batch_at([0], [5])


@pytest.mark.parametrize("cache", [True, False])
def test_spans_are_sampled_as_episodes_of_their_own_and_named_in_episode_steps(tagged_store, cache):
    # Episode 2 (9 steps) narrowed to [1, 4) and [6, 9); episode 4 (6 steps) dropped; the rest whole.
    spans = {2: [(6, 9), (1, 4)], 4: []}
    sampler = WindowSampler(tagged_store, obs_keys=("state",), obs_horizon=2, action_horizon=4, batch_size=256,
                            cache=cache, spans=spans)
    assert len(sampler) == 4 + 1 + 3 + 3 + 2 + 3
    batch = sampler.sample()
    episode, step = batch["obs"]["state"][..., 0], batch["obs"]["state"][..., 1]
    np.testing.assert_array_equal(episode[:, -1], batch["episode"])
    np.testing.assert_array_equal(step[:, -1], batch["t"])
    assert 4 not in batch["episode"]
    in_two = batch["episode"] == 2
    assert set(batch["t"][in_two].tolist()) == {1, 2, 3, 6, 7, 8}
    # Within a span the window is padded at the span's edges, never reaching the steps between.
    steps_seen = set(step[in_two].ravel().tolist()) | set(batch["action"][in_two][..., 1].ravel().tolist())
    assert steps_seen <= {1, 2, 3, 6, 7, 8}
    window = sampler.batch_at([2, 2], [6, 3])
    np.testing.assert_array_equal(window["action"][0][:, 1], [6, 6, 7, 8])
    np.testing.assert_array_equal(window["action"][1][:, 1], [2, 3, 3, 3])
    # The steps padded at a cut (not the operator's: left out of the loss) are marked; an
    # episode's own ends pad with real labels (holding still) and are not.
    np.testing.assert_array_equal(window["action_is_pad"], [[True, False, False, False],
                                                            [False, False, True, True]])
    whole = sampler.batch_at([0, 0], [0, 3])  # episode 0, 4 steps, unspanned
    np.testing.assert_array_equal(whole["action"][:, :, 1], [[0, 0, 1, 2], [2, 3, 3, 3]])
    assert not whole["action_is_pad"].any()
    assert batch["action_is_pad"].shape == (256, 4) and batch["action_is_pad"][in_two].any()
    assert not batch["action_is_pad"][~in_two].any()


def test_bad_spans_are_refused_naming_the_episode(tagged_store):
    with pytest.raises(StoreError, match=r"span \(3, 12\) of episode 2 is not a step range within its 9 steps"):
        WindowSampler(tagged_store, spans={2: [(3, 12)]})
    with pytest.raises(StoreError, match=r"spans name episodes \[7\] that are not in the view"):
        WindowSampler(tagged_store, spans={7: [(0, 1)]})
    with pytest.raises(StoreError, match="the spans leave no step"):
        WindowSampler(tagged_store, spans={e: [] for e in range(6)})
    sampler = WindowSampler(tagged_store, spans={2: [(1, 4)]})
    with pytest.raises(StoreError, match=r"steps \[5\] of episodes \[2\] are outside this sampler's spans"):
        sampler.batch_at([2], [5])
