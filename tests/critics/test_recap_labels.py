import numpy as np
import torch

from robot_learn.critics import ValueCritic, advantages, mc_returns, normalised_rewards, recap_labels
from robot_learn.data import EpisodeStore

torch.set_num_threads(1)


def test_returns_and_rewards_on_a_known_case():
    r = normalised_rewards(4, success=False, failure_penalty=6.0, max_length=4)
    np.testing.assert_allclose(r, [-0.1, -0.1, -0.1, -0.7])
    np.testing.assert_allclose(mc_returns(r), [-1.0, -0.9, -0.8, -0.7])
    np.testing.assert_allclose(mc_returns(normalised_rewards(2, True, 6.0, 4)), [-0.2, -0.1])


def test_advantage_with_exact_values_is_zero_and_detects_better_than_expected():
    r = np.array([-0.1, -0.1, -0.1])
    v = mc_returns(r)
    np.testing.assert_allclose(advantages(v, r, n_step=2), 0.0, atol=1e-12)
    pessimistic = v.copy()
    pessimistic[0] -= 0.5  # the critic expected worse at step 0: that step beats it by 0.5
    np.testing.assert_allclose(advantages(pessimistic, r, n_step=1), [0.5, 0.0, 0.0], atol=1e-12)


def test_value_critic_learns_binned_returns():
    x = np.linspace(0, 1, 200)[:, None].astype(np.float32)
    returns = -x[:, 0] * 0.8
    critic = ValueCritic(1, num_bins=51)
    critic.fit(x, returns, steps=600, seed=0)
    assert np.abs(critic.value(x) - returns).mean() < 0.05


def test_recap_labels_prefer_successful_episodes_and_force_human_steps_positive(tmp_path):
    store = EpisodeStore.create(tmp_path / "r.zarr")
    rng = np.random.default_rng(0)
    for i in range(12):
        success = i % 2 == 0
        T = 20
        state = np.zeros((T, 10), dtype=np.float32)
        state[:, 0] = 1.0 if success else -1.0  # the state tells a good episode from a bad one
        state[:, 1] = np.arange(T) / T
        human = np.zeros(T, dtype=bool)
        if i == 1:
            human[5:8] = True
        store.append_episode({"state": state + rng.normal(0, 0.01, state.shape).astype(np.float32),
                              "action": np.zeros((T, 5), np.float32), "intervention": human},
                             {"task": "stack", "instruction": "x", "success": success, "seed": i,
                              "source": "rollout"})
    labels = recap_labels(store.view(), obs_keys=("state",), n_step=5, percentile=50.0, critic_steps=400,
                          num_bins=51, failure_penalty=20.0)
    good = np.mean([ind.mean() for ind, e in zip(labels.indicator, labels.episodes) if e % 2 == 0])
    bad = np.mean([ind.mean() for ind, e in zip(labels.indicator, labels.episodes) if e % 2 == 1])
    assert good > bad
    assert labels.indicator[1][5:8].all()
    assert set(labels.threshold) == {"stack"}
