"""One builder of a policy for a data view: normalisers from that view's frames."""

import numpy as np

from robot_learn.data import EpisodeStore
from robot_learn.policies import diffusion_state_config
from robot_learn.training import build_policy_for_view


def episode(T, low, task):
    state = np.linspace(low, low + 1.0, T, dtype=np.float32)[:, None].repeat(10, 1)
    return ({"state": state, "env_state": np.zeros((T, 14), np.float32),
             "action": np.linspace(low, low + 2.0, T, dtype=np.float32)[:, None].repeat(5, 1)},
            {"task": task, "instruction": f"do {task}", "success": True, "seed": 0, "source": "demo"})


def test_policy_normalisers_and_vocabulary_come_from_the_view_not_the_store(tmp_path):
    store = EpisodeStore.create(tmp_path / "s.zarr")
    store.append_episode(*episode(20, 0.0, "stack"))
    store.append_episode(*episode(20, 10.0, "unstack"))
    view = store.view(task="stack")
    config = diffusion_state_config(text_encoder="vocab")
    policy = build_policy_for_view(config, view)
    norm = policy.obs_encoder.state_encoder.normalizers["state"]
    np.testing.assert_allclose(norm.centre.numpy(), 0.5, atol=1e-6)   # stack's state is 0..1, not 0..11
    np.testing.assert_allclose(policy.action_normalizer.centre.numpy(), 1.0, atol=1e-6)
    assert "unstack" not in policy.config.vocab
    whole = build_policy_for_view(config, store.view())
    np.testing.assert_allclose(whole.obs_encoder.state_encoder.normalizers["state"].centre.numpy(), 5.5, atol=1e-6)
