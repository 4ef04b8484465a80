import numpy as np
import pytest

from robot_learn.data import EpisodeStore, WindowSampler
from robot_learn.loops.aggregation import (
    ConditionSampler, MixtureSampler, human_steps_mask, runs, split_batch, write_selection,
)


def episode(T, human, offset):
    steps = {"state": np.arange(T, dtype=np.float32)[:, None].repeat(10, 1) + offset,
             "action": np.full((T, 5), offset, dtype=np.float32),
             "intervention": np.asarray(human, dtype=bool)}
    steps["action"][steps["intervention"]] = -1.0  # human actions are recognisable
    return steps


@pytest.fixture
def store(tmp_path):
    s = EpisodeStore.create(tmp_path / "c.zarr")
    s.append_episode(episode(8, [0, 0, 1, 1, 1, 0, 0, 1], 0), {"task": "stack", "instruction": "i", "success": False,
                                                                "seed": 0, "source": "intervention", "round": 1})
    s.append_episode(episode(5, [0] * 5, 100), {"task": "stack", "instruction": "i", "success": True,
                                                 "seed": 1, "source": "rollout", "round": 1})
    return s


def test_runs_finds_maximal_true_runs_with_min_length():
    mask = np.array([0, 1, 1, 0, 1, 0, 1, 1, 1], dtype=bool)
    assert runs(mask) == [(1, 3), (4, 5), (6, 9)]
    assert runs(mask, min_length=2) == [(1, 3), (6, 9)]


def test_aggregation_takes_only_human_controlled_steps(store, tmp_path):
    out = EpisodeStore.create(tmp_path / "t.zarr")
    selection = {e: runs(human_steps_mask(store, e)) for e in range(store.num_episodes)}
    assert write_selection(out, store, selection, "intervention") == 2
    assert out.num_frames == 4
    assert np.all(out.read("intervention")) and np.all(out.read("action") == -1.0)
    np.testing.assert_array_equal(out.episode(0)["steps"]["state"][:, 0], [2, 3, 4])
    assert list(out.meta["source"]) == ["intervention", "intervention"]


def test_split_batch_is_exact_and_proportional():
    assert split_batch(64, {"a": 1, "b": 1, "c": 1}) == {"a": 22, "b": 21, "c": 21}
    assert sum(split_batch(10, {"a": 1000, "b": 1}).values()) == 10
    with pytest.raises(ValueError, match="all mixture weights are zero"):
        split_batch(8, {"a": 0})


def test_mixture_sampler_draws_fixed_shares_from_each_part(store):
    human = WindowSampler(store.view(source="intervention"), obs_keys=("state",), obs_horizon=2,
                          action_horizon=4, batch_size=3, seed=0)
    rollout = WindowSampler(store.view(source="rollout"), obs_keys=("state",), obs_horizon=2,
                            action_horizon=4, batch_size=5, seed=0)
    mix = MixtureSampler({"human": human, "rollout": rollout})
    batch = mix.sample()
    assert batch["obs"]["state"].shape == (8, 2, 10) and len(batch["instruction"]) == 8
    assert list(batch["episode"]) == [0] * 3 + [1] * 5
    state = mix.state_dict()
    again = mix.sample()
    mix.load_state_dict(state)
    np.testing.assert_array_equal(mix.sample()["t"], again["t"])


def test_condition_sampler_labels_anchor_step_and_drops_some(store):
    inner = WindowSampler(store, obs_keys=("state",), obs_horizon=2, action_horizon=4, batch_size=400, seed=0)
    labels = {0: np.arange(8) % 2 == 0, 1: np.ones(5, dtype=bool)}
    batch = ConditionSampler(inner, ("advantage",), {"advantage": labels}, dropout=0.3, seed=0).sample()
    adv = batch["obs"]["advantage"]
    assert adv.shape == (400, 2, 1)
    expected = np.array([1.0 if labels[e][t] else -1.0 for e, t in zip(batch["episode"], batch["t"])])
    kept = adv[:, -1, 0] != 0
    np.testing.assert_array_equal(adv[kept, -1, 0], expected[kept])
    assert 0.2 < 1 - kept.mean() < 0.4


def test_condition_sampler_leaves_an_unlabelled_condition_at_zero(store):
    inner = WindowSampler(store, obs_keys=("state",), obs_horizon=2, action_horizon=4, batch_size=50, seed=0)
    batch = ConditionSampler(inner, ("advantage", "high_return"), {}, dropout=0.0).sample()
    assert not batch["obs"]["advantage"].any() and not batch["obs"]["high_return"].any()
    with pytest.raises(ValueError, match=r"labels for \['x'\], which are not conditions of the policy"):
        ConditionSampler(inner, ("advantage",), {"x": {}})


def test_training_sampler_gives_each_part_the_memory_cap(tmp_path):
    """``data.cache_gb`` reaches each part's sampler: with a cap too small for the data a part
    reads out of core, and without one everything is cached."""
    import warnings

    from loop_fixtures import make_base

    from robot_learn.loops.finetune import training_sampler
    from robot_learn.loops.round import Part
    from robot_learn.policies import load_policy

    demos, base_dir = make_base(tmp_path)
    policy = load_policy(base_dir)
    parts = {"a": Part(demos, 3.0), "b": Part(demos, 1.0)}
    cached = training_sampler(policy, parts, 8, seed=0, dropout=0.0)
    assert all(s.cached for s in cached.samplers.values())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the sampler says it reads out of core
        capped = training_sampler(policy, parts, 8, seed=0, dropout=0.0, memory={"max_cache_bytes": 1024})
    assert not any(s.cached for s in capped.samplers.values())
    assert len(capped.sample()["action"]) == 8
