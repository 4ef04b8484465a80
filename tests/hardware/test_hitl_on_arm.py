"""A HITL session on an emulated SO-101 follower: the policy's observation keys come
from the arm's observation spec, and a key the arm lacks is refused up front."""

import numpy as np
import pytest

from robot_learn.data import EpisodeStore
from robot_learn.hardware import SafetyConfig, so101_follower
from robot_learn.loops import HITLSession, PolicyActor

torch = pytest.importorskip("torch")
from robot_learn.policies import DiffusionConfig, make_policy  # noqa: E402


def _stats(low, high):
    return {"min": low, "max": high, "mean": (low + high) / 2, "std": (high - low) / 4, "q01": low, "q99": high}


def _policy(state_dims):
    torch.manual_seed(0)
    config = DiffusionConfig(action_dim=6, state_dims=state_dims, obs_horizon=2, action_horizon=8,
                             execute_horizon=4, state_hidden_dims=[16], state_feature_dim=8, down_dims=[16, 32],
                             timestep_embed_dim=16, num_inference_steps=3)
    low = np.array([20, 20, 20, 20, 20, 60], dtype=np.float32)  # inside the arm's joint ranges
    stats = {"action": _stats(low, low + 20)}
    stats.update({k: _stats(np.full(d, -100, np.float32), np.full(d, 100, np.float32)) for k, d in state_dims.items()})
    return make_policy("diffusion", config, stats)


@pytest.fixture
def follower(so101_emulator, calibrate_files):
    arm = so101_follower(so101_emulator.port, calibration_dir=calibrate_files("so101_follower"), timeout_ms=50,
                         safety=SafetyConfig(max_relative_step=100.0, watchdog_timeout_s=None))
    with arm:
        yield arm


def test_arm_observation_spec_names_its_joint_state(follower):
    assert follower.observation_spec() == {"state": (6,)}
    obs = follower.get_observation()
    assert obs["state"].shape == (6,) and obs["state"][2] == pytest.approx(obs["elbow_flex"])


def test_hitl_session_runs_a_policy_on_the_arm_and_records_its_keys(follower, tmp_path):
    torch.set_num_threads(1)
    store = EpisodeStore.create(tmp_path / "arm.zarr")
    session = HITLSession(follower, PolicyActor(_policy({"state": 6})), None, store, "stack", max_steps=6,
                          reset_fn=lambda robot, seed: None)  # a person resets a real scene
    (ep,) = session.run(1)
    assert ep.steps == 6 and ep.source == "rollout"
    steps = store.episode(0)["steps"]
    assert steps["state"].shape == (6, 6) and steps["action"].shape == (6, 6)
    assert "env_state" not in store.keys
    np.testing.assert_array_equal(steps["action"], steps["policy_action"])


def test_hitl_session_refuses_a_policy_needing_a_key_the_arm_lacks(follower, tmp_path):
    store = EpisodeStore.create(tmp_path / "arm.zarr")
    actor = PolicyActor(_policy({"state": 6, "env_state": 14}))
    with pytest.raises(ValueError, match=r"the policy needs observation 'env_state' but robot ServoArm "
                                         r"provides only state"):
        HITLSession(follower, actor, None, store, "stack", reset_fn=lambda robot, seed: None)
    assert store.num_episodes == 0
