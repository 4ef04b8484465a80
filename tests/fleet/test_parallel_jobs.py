"""Ray workers give what one process gives: demos per seed, evaluations per block of seeds.

Real Ray (2 CPUs), real MuJoCo, real zarr stores, a tiny untrained diffusion policy.
(World-model rollouts on Ray are tested beside the world model, in tests/world_models.)
"""

from __future__ import annotations

import pytest
import torch

ray = pytest.importorskip("ray")  # the fleet extra; `make test` installs it

from robot_learn.data import EpisodeStore  # noqa: E402
from robot_learn.envs.demos import collect_demos  # noqa: E402
from robot_learn.evaluation import evaluate  # noqa: E402
from robot_learn.fleet.parallel_jobs import collect_demos_on_ray, evaluate_on_ray, seed_blocks  # noqa: E402
from robot_learn.policies import DiffusionConfig  # noqa: E402
from robot_learn.training import build_policy_for_view  # noqa: E402

TASK, MAX_STEPS = "stack", 20


@pytest.fixture(scope="module")
def local_ray():
    from robot_learn.fleet import start_ray

    torch.set_num_threads(1)
    start_ray(num_cpus=2)
    try:
        yield
    finally:
        ray.shutdown()


def test_seed_blocks_cover_every_seed_once_and_refuse_nonsense():
    assert seed_blocks(5, 2, 100) == [(100, 3), (103, 2)]
    assert seed_blocks(2, 4, 0) == [(0, 1), (1, 1)]
    with pytest.raises(ValueError, match="episodes and workers must be >= 1, got 0 and 2"):
        seed_blocks(0, 2, 0)


def test_demos_on_ray_are_the_episodes_one_process_records(local_ray, tmp_path, assert_same_episodes_by_seed):
    settings = dict(noise=0.5, seed=7, max_steps=MAX_STEPS, keep_failures=True, cameras=())
    collect_demos(TASK, 4, tmp_path / "local.zarr", progress_bar=False, **settings)
    summary = collect_demos_on_ray(TASK, 4, tmp_path / "ray.zarr", 2, **settings)
    assert summary.stored == 4
    assert_same_episodes_by_seed(tmp_path / "local.zarr", tmp_path / "ray.zarr", ("action", "state", "env_state"),
                                 [7, 8, 9, 10])


def test_evaluation_on_ray_is_one_process_evaluating_each_block(local_ray, tmp_path):
    collect_demos(TASK, 2, tmp_path / "demos.zarr", cameras=(), max_steps=60, progress_bar=False)
    config = DiffusionConfig(action_dim=5, state_dims={"state": 10, "env_state": 14}, obs_horizon=2,
                             action_horizon=8, execute_horizon=4, state_hidden_dims=[16], state_feature_dim=8,
                             down_dims=[16, 32], timestep_embed_dim=16, num_inference_steps=2)
    torch.manual_seed(0)
    policy = build_policy_for_view(config, EpisodeStore.open(tmp_path / "demos.zarr").view())
    remote = evaluate_on_ray(policy, TASK, 5, 2, seed=1_000_000, max_steps=MAX_STEPS, videos=0)
    local = [e for first, n in seed_blocks(5, 2, 1_000_000)
             for e in evaluate(policy, TASK, episodes=n, seed=first, workers=1, vectorization="sync",
                               max_steps=MAX_STEPS, videos=0).episodes]
    assert remote.info["ray_workers"] == 2 and len(remote.episodes) == 5
    assert [(e.seed, e.success, e.length) for e in remote.episodes] == [(e.seed, e.success, e.length) for e in local]
    assert [e.progress for e in remote.episodes] == pytest.approx([e.progress for e in local], abs=1e-9)
