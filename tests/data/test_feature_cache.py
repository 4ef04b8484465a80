"""The feature cache beside a store: reused only when the same encoder made it for the
same committed frames; rebuilt, with the reason said, otherwise."""

from __future__ import annotations

import numpy as np
import pytest

from robot_learn.data import EpisodeStore, StoreError, WindowSampler
from robot_learn.data.feature_cache import load_or_build_feature_cache, read_feature_cache

from episode_builders import make_meta, make_steps


def _encode_mean(images, instructions):
    """A stand-in encoding function (the cache does not care how features are made)."""
    return np.stack([images["front"].reshape(len(instructions), -1).mean(1), [len(t) for t in instructions]], 1)


@pytest.fixture
def store(tmp_path):
    store = EpisodeStore.create(tmp_path / "s.zarr")
    for i, n in enumerate((5, 7)):
        store.append_episode(make_steps(n, seed=i), make_meta(i))
    return store


def test_cache_is_built_once_and_then_reused(store):
    said = []
    first = load_or_build_feature_cache(store, "features", "enc-a", ["front"], _encode_mean, log=said.append)
    again = load_or_build_feature_cache(store, "features", "enc-a", ["front"], _encode_mean, log=said.append)
    assert first.shape == (12, 2) and np.array_equal(first, again)
    assert "building" in said[0] and "no cache yet" in said[0] and "using cached" in said[1]
    images = store.read("images/front")
    assert np.allclose(first[:, 0], images.reshape(12, -1).mean(1))


def test_cache_from_another_encoder_is_rebuilt_and_says_so(store):
    load_or_build_feature_cache(store, "features", "enc-a", ["front"], _encode_mean, log=lambda _: None)
    features, why = read_feature_cache(store, "features", "enc-b", ["front"])
    assert features is None and "encoder_identity 'enc-a' (now 'enc-b')" in why
    said = []
    load_or_build_feature_cache(store, "features", "enc-b", ["front"], lambda i, t: _encode_mean(i, t) + 1,
                                log=said.append)
    assert "enc-a" in said[0]
    assert read_feature_cache(store, "features", "enc-b", ["front"])[0] is not None


def test_cache_is_rebuilt_after_episodes_are_appended(store):
    load_or_build_feature_cache(store, "features", "enc-a", ["front"], _encode_mean, log=lambda _: None)
    store.append_episode(make_steps(3, seed=9), make_meta(9))
    features, why = read_feature_cache(store, "features", "enc-a", ["front"])
    assert features is None and "num_frames 12 (now 15)" in why


def test_store_without_the_camera_is_refused_naming_it(store):
    with pytest.raises(StoreError, match=r"no images for cameras \['wrist'\]"):
        load_or_build_feature_cache(store, "features", "enc-a", ["wrist"], _encode_mean, log=lambda _: None)


def test_sampler_reads_cached_features_aligned_with_their_frames(store):
    features = np.arange(12, dtype=np.float32)[:, None] * np.ones((1, 3), np.float32)
    sampler = WindowSampler(store, obs_keys=("state", "features"), obs_horizon=1, action_horizon=2,
                            batch_size=4, derived={"features": features})
    batch = sampler.batch_at([1, 1], [0, 6])
    assert batch["obs"]["features"][:, 0, 0].tolist() == [5.0, 11.0]


def test_sampler_refuses_misaligned_or_non_finite_features(store):
    with pytest.raises(StoreError, match="has 11 rows; the store has 12"):
        WindowSampler(store, obs_keys=("features",), derived={"features": np.zeros((11, 3), np.float32)})
    bad = np.zeros((12, 3), np.float32)
    bad[4, 1] = np.nan
    with pytest.raises(StoreError, match="non-finite value at frame 4"):
        WindowSampler(store, obs_keys=("features",), derived={"features": bad})


def test_cache_made_by_other_code_is_rebuilt_and_says_so(store):
    """The same identity, features off in the last bit (as the same weights through other code
    give): the first batch, encoded again, no longer matches, so the cache is rebuilt."""
    def other_code(images, instructions):
        features = _encode_mean(images, instructions).astype(np.float32)
        return np.nextafter(features, np.float32(np.inf))

    load_or_build_feature_cache(store, "features", "enc-a", ["front"], other_code, log=lambda _: None)
    said = []
    features = load_or_build_feature_cache(store, "features", "enc-a", ["front"], _encode_mean, log=said.append)
    assert "building" in said[0] and "other code" in said[0] and "first 12 frames" in said[0]
    stale = other_code({"front": store.read("images/front")}, [""] * 12)
    assert not np.array_equal(features[:, 0], stale[:, 0]) and np.allclose(features[:, 0], stale[:, 0])
    again = []
    assert np.array_equal(load_or_build_feature_cache(store, "features", "enc-a", ["front"], _encode_mean,
                                                      log=again.append), features)
    assert "using cached" in again[0]


def test_the_check_encodes_in_the_batches_the_build_used(store):
    """An encoding that depends on its batch (centred on the batch mean) matches itself only in
    the same batches: the build's batch size is recorded and the check uses it."""
    def centred(images, instructions):
        features = _encode_mean(images, instructions)
        return features - features.mean(0)

    load_or_build_feature_cache(store, "features", "enc-a", ["front"], centred, log=lambda _: None, batch_size=5)
    said = []
    load_or_build_feature_cache(store, "features", "enc-a", ["front"], centred, log=said.append)
    assert "using cached" in said[0], said


def test_a_cache_computed_on_another_device_kind_is_used_unchecked_and_says_so(store):
    """CPU and CUDA differ in the last bits anyway: checking across them would rebuild at
    every switch, so a cache built on another kind of device is used as it is."""
    def other_code(images, instructions):
        return np.nextafter(_encode_mean(images, instructions).astype(np.float32), np.float32(np.inf))

    load_or_build_feature_cache(store, "features", "enc-a", ["front"], other_code, log=lambda _: None,
                                computed_on="cuda")
    said = []
    load_or_build_feature_cache(store, "features", "enc-a", ["front"], _encode_mean, log=said.append)
    assert "using cached" in said[0] and "computed on cuda, not re-checked on cpu" in said[0], said
