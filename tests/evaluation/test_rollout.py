"""evaluate(): a real (tiny, untrained) DiffusionPolicy on real MuJoCo tasks."""

import imageio.v2 as imageio
import numpy as np
import pytest
import torch

from robot_learn.evaluation import EVAL_SEED, evaluate
from robot_learn.policies import IncompatiblePolicyError, diffusion_state_config, make_policy

MAX_STEPS = 12


def tiny_state_policy(**overrides):
    config = diffusion_state_config(down_dims=[16, 32], action_horizon=8, execute_horizon=4,
                                    num_inference_steps=2, state_hidden_dims=[32],
                                    state_feature_dim=16, timestep_embed_dim=16, **overrides)
    torch.manual_seed(0)
    return make_policy("diffusion", config, stats=None)


@pytest.fixture(scope="module")
def result_with_videos(tmp_path_factory):
    torch.set_num_threads(1)
    out = tmp_path_factory.mktemp("eval")
    result = evaluate(tiny_state_policy(), "stack", episodes=3, workers=2, videos=2,
                      out_dir=out, max_steps=MAX_STEPS)
    return result, out


def test_episodes_use_consecutive_held_out_seeds(result_with_videos):
    result, _ = result_with_videos
    assert result.seeds == [EVAL_SEED, EVAL_SEED + 1, EVAL_SEED + 2]
    assert result.info["workers"] == 2


def test_each_episode_reports_length_progress_and_success(result_with_videos):
    result, _ = result_with_videos
    for ep in result.episodes:
        assert 1 <= ep.length <= MAX_STEPS
        assert 0.0 <= ep.progress <= 1.0
        # the best progress during the episode is recorded too (never below the final one)
        assert ep.progress <= ep.peak_progress <= 1.0
        # An untrained policy that does not finish runs into the step limit.
        assert ep.success or ep.length == MAX_STEPS
    assert result.summary.episodes == 3
    assert result.summary.mean_peak_progress == pytest.approx(np.mean([e.peak_progress for e in result.episodes]))


def test_videos_hold_every_step_of_the_first_episodes(result_with_videos):
    result, out = result_with_videos
    paths = sorted((out / "videos").glob("*.mp4"))
    assert [p.name for p in paths] == ["episode_000.mp4", "episode_001.mp4"]
    assert result.episodes[2].video is None
    first_frames = []
    for ep, path in zip(result.episodes, paths):
        frames = imageio.mimread(path)
        assert len(frames) == ep.length + 1  # the reset frame plus one per step
        h, w = frames[0].shape[:2]
        assert w >= 2 * h - 1  # front and wrist side by side
        first_frames.append(frames[0].astype(np.int16))
    # Distinct seeds place the objects differently, so the first frames differ.
    assert np.abs(first_frames[0] - first_frames[1]).mean() > 0.5


def test_evaluation_is_repeatable_for_the_same_seeds(result_with_videos):
    result, _ = result_with_videos
    again = evaluate(tiny_state_policy(), "stack", episodes=3, workers=2, videos=0,
                     max_steps=MAX_STEPS)
    assert [(e.seed, e.length, e.success) for e in again.episodes] == \
        [(e.seed, e.length, e.success) for e in result.episodes]
    assert [e.progress for e in again.episodes] == pytest.approx(
        [e.progress for e in result.episodes], abs=1e-6)


def test_sync_and_async_vector_envs_give_the_same_episodes(result_with_videos):
    result, _ = result_with_videos
    assert result.info["vectorization"] == "async"  # workers=2 with "auto"
    sync = evaluate(tiny_state_policy(), "stack", episodes=3, workers=2, videos=0,
                    max_steps=MAX_STEPS, vectorization="sync")
    assert sync.info["vectorization"] == "sync"
    assert [e.progress for e in sync.episodes] == pytest.approx(
        [e.progress for e in result.episodes], abs=1e-6)


def test_single_worker_uses_a_sync_vector_env_and_restores_train_mode():
    policy = tiny_state_policy().train()
    result = evaluate(policy, "unstack", episodes=1, workers=1, videos=0, max_steps=4)
    assert result.info["workers"] == 1 and result.episodes[0].length <= 4
    assert result.info["vectorization"] == "sync"
    assert policy.training  # evaluate() puts the policy back the way it found it


def test_policy_with_wrong_action_dim_is_rejected_before_rolling_out():
    policy = tiny_state_policy(action_dim=6)
    with pytest.raises(IncompatiblePolicyError, match="action dim: policy 6, caller 5"):
        evaluate(policy, "stack", episodes=1, workers=1, videos=0, max_steps=4)


@pytest.mark.parametrize("kwargs,message", [
    ({"episodes": 0}, "episodes must be >= 1"),
    ({"workers": 0}, "workers must be >= 1"),
    ({"vectorization": "threads"}, "unknown vectorization 'threads'; valid: auto, sync, async"),
])
def test_bad_arguments_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        evaluate(tiny_state_policy(), "stack", **{"episodes": 1, "workers": 1, **kwargs})


def test_async_vector_env_passes_each_env_its_own_instruction():
    """gymnasium's shared memory reads a Text space once, when the vector env is built, so
    async envs with shared memory hand the policy 200 'a's instead of the words; the
    instructions must equal the sync env's at every reset."""
    from robot_learn.evaluation.rollout import make_vector_env

    seen = {}
    for mode in ("sync", "async"):
        envs = make_vector_env("stack", 2, (), 32, 4, vectorization=mode)
        try:
            seen[mode] = [tuple(envs.reset(seed=[seed, seed + 1])[0]["instruction"]) for seed in (11, 12)]
        finally:
            envs.close()
    assert seen["async"] == seen["sync"]
    assert all(" cube" in words for pair in seen["sync"] for words in pair)
