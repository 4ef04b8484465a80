"""ReGuide's phase guide from a real episode store: the latent dynamics model learns from
demos plus rollouts (successes and failures), and PCG steers a policy in evaluation."""

from pathlib import Path

import pytest
import torch

from robot_learn.data import EpisodeStore
from robot_learn.envs.demos import collect_demos
from robot_learn.evaluation import evaluate
from robot_learn.policies import DiffusionConfig
from robot_learn.policies.phase_prototypes import PhaseSettings
from robot_learn.training import build_policy_for_view
from robot_learn.training.phase_guide import build_phase_guide, load_phase_guide

TASK, HORIZON = "stack", 4
PHASES = PhaseSettings(phases=2, clusters_per_phase=3, components=8, prototypes_per_phase=16, delta_steps=HORIZON)


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """4 expert demos and 3 noisy-expert episodes kept as rollouts, failures included."""
    torch.set_num_threads(1)
    path = tmp_path_factory.mktemp("guide") / "stack.zarr"
    collect_demos(TASK, 4, path, cameras=(), progress_bar=False)
    collect_demos(TASK, 3, path, cameras=(), noise=0.2, seed=100, keep_failures=True, source="rollout",
                  max_steps=40, progress_bar=False)
    return path


@pytest.fixture(scope="module")
def guide(store) -> tuple[Path, dict]:
    out = store.parent / "guide"
    opened = EpisodeStore.open(store)
    record = build_phase_guide(opened.view(source="demo"), out, rollouts=[opened.view(source="rollout")],
                               horizon=HORIZON, hidden_dims=(128, 128), steps=300, phase_settings=PHASES)
    return out, record


def tiny_policy(store):
    config = DiffusionConfig(action_dim=5, state_dims={"state": 10, "env_state": 14}, obs_horizon=2, action_horizon=8,
                             execute_horizon=4, state_hidden_dims=[16], state_feature_dim=8, down_dims=[16, 32],
                             timestep_embed_dim=16, num_inference_steps=3)
    return build_policy_for_view(config, EpisodeStore.open(store).view(source="demo")).eval()


def test_the_dynamics_model_learns_from_demos_and_rollouts_beyond_predicting_no_change(guide):
    _, record = guide
    assert record["demos"] == 4 and record["rollouts"] == 3 and record["rollout_successes"] < 3
    dynamics = record["dynamics"]
    # An untrained model predicts no change (its head starts at zero): ratio 1.
    assert dynamics["heldout_mse"] < 0.7 * dynamics["no_change_mse"], dynamics
    assert all(lo < up for lo, up in zip(record["thresholds"]["lower"], record["thresholds"]["upper"]))


def test_evaluation_runs_a_policy_under_pcg(guide, store, one_torch_thread):
    sampler = load_phase_guide(guide[0], tiny_policy(store), TASK)
    result = evaluate(sampler.policy, TASK, episodes=2, workers=2, max_steps=12, videos=0, vectorization="sync",
                      predict=sampler)
    assert len(result.episodes) == 2 and result.info["predict"].startswith("pcg")
    assert sampler.chunks == 2 * 3  # 12 steps, a chunk every 4 per env
    assert sampler.phase is not None and sampler.phase.shape == (2,)


def test_a_guide_for_another_task_is_refused_naming_both(guide, store):
    with pytest.raises(ValueError, match=r"trained on task 'stack' with encoder 'state'; this run needs task "
                                         r"'unstack' with encoder 'state'$"):
        load_phase_guide(guide[0], tiny_policy(store), "unstack")


def test_fewer_demos_than_phases_is_refused_before_anything_is_written(store, tmp_path):
    with pytest.raises(ValueError, match=r"got 4 demos for phases=5$"):
        build_phase_guide(EpisodeStore.open(store).view(source="demo"), tmp_path / "g",
                          phase_settings=PhaseSettings(phases=5))
    assert not (tmp_path / "g").exists()
