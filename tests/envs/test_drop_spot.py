"""Reverse tasks' drop spot: ``beside`` the target (the default) or ``anywhere`` on the reachable ring.

Time-reversed, an easy-task episode starts where the easy task put the object down; with the
spot ``anywhere`` those starts spread as the hard task's own resets do (rev2fwd's recipe).
"""

import math

import numpy as np
import pytest

from robot_learn.data import EpisodeStore
from robot_learn.envs import forward_task_of, make_env, make_expert, reverse_into
from robot_learn.envs.conditions import EnvConditions
from robot_learn.envs.demos import collect_demos
from robot_learn.envs.task_base import ANGLE_RANGE, RADIUS_RANGE

EASY = ["unstack", "peg_remove", "bin_take"]


def _spot_target_distances(env, seeds):
    out = []
    for seed in seeds:
        env.reset(seed=seed)
        p = env.params
        r, a = math.hypot(p[9], p[10]), math.atan2(p[10], p[9])
        assert RADIUS_RANGE[0] <= r <= RADIUS_RANGE[1] and ANGLE_RANGE[0] <= a <= ANGLE_RANGE[1]
        out.append(np.linalg.norm(p[9:11] - p[3:5]))
    return np.array(out)


@pytest.mark.parametrize("easy", EASY)
def test_spots_anywhere_spread_like_the_hard_tasks_starts(easy):
    env, hard = make_env(easy, cameras=()), make_env(forward_task_of(easy), cameras=())
    seeds = range(40)
    beside = _spot_target_distances(env, seeds)
    anywhere = _spot_target_distances(make_env(easy, cameras=(), drop_spot="anywhere"), seeds)
    starts = []
    for seed in seeds:
        hard.reset(seed=seed)
        starts.append(np.linalg.norm(hard.params[0:2] - hard.params[3:5]))
    np.testing.assert_allclose(beside, env.task.spot_distance)  # always the same offset from the target
    # Anywhere: the offsets vary at least half as widely as the hard task's starts (over 5 cm),
    # and their median lies within 30% of the hard task's.
    assert np.ptp(anywhere) > 0.5 * np.ptp(starts) > 0.05
    assert abs(np.median(anywhere) / np.median(starts) - 1) < 0.3, (np.median(anywhere), np.median(starts))


@pytest.mark.parametrize("easy", EASY)
def test_the_easy_expert_puts_the_object_down_anywhere_and_reversed_it_starts_there(tmp_path, easy):
    conditions = EnvConditions(drop_spot="anywhere")
    summary = collect_demos(easy, 3, tmp_path / "easy.zarr", cameras=(), to_rest=True, progress_bar=False,
                            conditions=conditions)
    assert summary.successes == 3
    store = EpisodeStore.open(tmp_path / "easy.zarr")
    with EpisodeStore.create(tmp_path / "hard.zarr") as out:
        assert reverse_into(out, store, store.view().episodes) == 3
    hard = EpisodeStore.open(tmp_path / "hard.zarr")
    env = make_env(easy, cameras=(), drop_spot="anywhere")
    for e in range(3):
        env.reset(seed=e)
        first = hard.episode(e)["steps"]["env_state"][0]
        # The reversed episode's object to move starts on the spot the easy expert was given.
        assert np.linalg.norm(first[0:2] - env.params[9:11]) < 0.025


def test_conditions_build_the_env_with_their_drop_spot():
    conditions = EnvConditions(drop_spot="anywhere")
    env = conditions.make_env("bin_take", cameras=())
    assert env.drop_spot == "anywhere" and not conditions.is_default
    assert conditions.describe() == "wide + drop anywhere"
    plain = make_env("bin_take", cameras=(), drop_spot="anywhere")
    env.reset(seed=5)
    plain.reset(seed=5)
    np.testing.assert_array_equal(env.params, plain.params)


@pytest.mark.parametrize("easy", EASY)
def test_dropping_anywhere_succeeds_anywhere_on_the_table_clear_of_the_target(easy):
    """The expert's episode succeeds in both envs; moved 10 cm away, the white square
    still counts for ``beside`` (not there: a failure) but not for ``anywhere``."""
    finals = {}
    for drop in ("anywhere", "beside"):
        env = make_env(easy, cameras=(), drop_spot=drop)
        obs, _ = env.reset(seed=7)
        expert = make_expert(easy, seed=7)
        expert.reset(env)
        for _ in range(env.max_steps):
            obs, _, terminated, truncated, info = env.step(expert.act(obs, env))
            if terminated or truncated:
                break
        assert info["success"], drop
        env.params[9:11] += [0.1, 0.0]  # the square elsewhere: only where the expert aimed
        finals[drop] = env.task.success(env)
    assert finals == {"anywhere": True, "beside": False}
    # In the target (where the object starts) is not put down anywhere.
    env = make_env(easy, cameras=(), drop_spot="anywhere")
    env.reset(seed=7)
    assert not env.task.placed(env)


@pytest.mark.parametrize("make, match", [
    (lambda: make_env("bin_take", cameras=(), drop_spot="far"), r"unknown drop_spot 'far'; valid: beside, anywhere"),
    (lambda: make_env("bin_place", cameras=(), drop_spot="anywhere"),
     r"drop_spot 'anywhere' is for reverse tasks .* a bin forward task's goal is its target"),
    (lambda: EnvConditions(drop_spot="far"), r"unknown drop_spot 'far'; valid: beside, anywhere"),
    (lambda: EnvConditions(drop_spot="anywhere").make_env("pusht"),
     r"start_spread, drop_spot and disturbances are for our tabletop tasks"),
])
def test_bad_drop_spots_are_refused_with_the_valid_ones(make, match):
    with pytest.raises(ValueError, match=match):
        make()
