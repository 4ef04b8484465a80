"""Training refuses data with NaN/Inf before the first step, naming the field and episode."""

import pytest
from training_fixtures import build_store, make_sampler, make_tiny_policy

from robot_learn.data import StoreError
from robot_learn.training import Trainer, TrainConfig


def test_training_refuses_a_store_with_a_nan_action_naming_the_field_and_episode(tmp_path):
    clean = build_store(tmp_path / "clean", num_episodes=3, length=12)
    dirty = build_store(tmp_path / "dirty", num_episodes=3, length=12, nan_action_episode=2)
    policy = make_tiny_policy(clean)  # normaliser stats from clean data: the NaN must not slip in via stats
    before = [p.detach().clone() for p in policy.parameters()]
    cfg = TrainConfig(steps=5, batch_size=4, out_dir=str(tmp_path / "run"), device="cpu", progress_bar=False)
    with pytest.raises(StoreError, match=r"'action' at episode 2, step 3"):
        Trainer(policy, make_sampler(dirty, 4, 0), cfg).fit()
    # Nothing was trained and no checkpoint was written.
    assert all((a == b).all() for a, b in zip(before, policy.parameters()))
    assert not (tmp_path / "run" / "checkpoints").exists()
