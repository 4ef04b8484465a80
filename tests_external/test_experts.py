"""Scripted experts reach ``success`` in the adapters (Meta-World's own policies; our PushT pusher)."""

import metaworld  # noqa: F401
import numpy as np
import pytest

from robot_learn.envs import make_env, make_expert


def run_expert(name: str, seed: int, noise: float = 0.0) -> tuple[bool, int, list[float]]:
    env = make_env(name, cameras=())
    expert = make_expert(name, noise=noise, seed=seed)
    obs, info = env.reset(seed=seed)
    expert.reset(env)
    progress = [info["progress"]]
    while True:
        obs, _, terminated, truncated, info = env.step(expert.act(obs, env))
        progress.append(info["progress"])
        if terminated or truncated:
            env.close()
            return info["success"], len(progress) - 1, progress


@pytest.mark.parametrize("task", ["peg-unplug-side", "peg-insert-side", "pick-place", "door-open", "drawer-open"])
def test_metaworld_expert_succeeds(task):
    results = [run_expert(f"metaworld/{task}", seed) for seed in range(3)]
    assert all(ok for ok, _, _ in results), [(ok, n) for ok, n, _ in results]
    _, _, progress = results[0]
    assert progress[-1] == 1.0 and progress[0] < 0.5


def test_metaworld_expert_noise_perturbs_its_actions_within_bounds():
    env = make_env("metaworld/peg-unplug-side", cameras=())
    obs, _ = env.reset(seed=1)
    clean_expert = make_expert("metaworld/peg-unplug-side", noise=0.0, seed=1)
    noisy_expert = make_expert("metaworld/peg-unplug-side", noise=0.3, seed=1)
    diffs = []
    for _ in range(40):  # early actions saturate at +-1, later ones do not
        clean, noisy = clean_expert.act(obs, env), noisy_expert.act(obs, env)
        assert clean.dtype == np.float32 and clean.shape == (4,) and np.all(np.abs(noisy) <= 1.0)
        diffs.append(np.abs(clean - noisy).max())
        obs, *_ = env.step(clean)
    env.close()
    assert max(diffs) > 0.1


def test_pusht_expert_solves_an_easy_seed_and_improves_coverage_on_others():
    """Our PushT pusher succeeds on about 40% of seeds (benchmarks/bench_external.py);
    seed 3 is one of them, and on every seed it ends closer to the goal than it starts."""
    ok, steps, progress = run_expert("pusht", 3)
    assert ok and steps < 300 and progress[-1] == 1.0
    for seed in (1, 4):
        _, _, progress = run_expert("pusht", seed)
        assert max(progress) > progress[0] + 0.2
