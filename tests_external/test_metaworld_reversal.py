"""Meta-World's reverse pair: unplugging in peg-insert-side's scene, reversed, inserts the peg."""

import metaworld  # noqa: F401
import numpy as np
import pytest

from robot_learn.data import EpisodeStore
from robot_learn.envs import make_env, make_expert, reverse_into, reverse_recorded
from robot_learn.envs.demos import collect_demos, record_demo_episode
from robot_learn.envs.external.metaworld_reverse import PEG_HIGH, PEG_LOW, copy_scene

EASY, HARD = "metaworld/peg-insert-side-reverse", "metaworld/peg-insert-side"
SEEDS = range(20)


def test_the_easy_task_starts_at_the_hard_tasks_goal_in_the_same_scene():
    easy, hard = make_env(EASY, cameras=()), make_env(HARD, cameras=())
    for seed in range(5):
        easy_obs, info = easy.reset(seed=seed)
        hard_obs, _ = hard.reset(seed=seed)
        assert not info["success"] and easy_obs["instruction"] == "peg unplug side"
        np.testing.assert_array_equal(easy_obs["env_state"][14:], hard_obs["env_state"][14:])  # the hole
        mw = easy.unwrapped.mw
        # The hard task's own success test: the peg's head within 7 cm of the hole's target.
        assert np.linalg.norm(mw._get_site_pos("pegHead") - mw._target_pos) < 0.07


def test_the_unplugging_expert_lays_the_peg_in_the_hard_tasks_start_range_and_rests():
    env = make_env(EASY, cameras=())
    successes = 0
    for seed in SEEDS:
        steps, meta = record_demo_episode(env, make_expert(EASY, seed=seed), seed, to_rest=True)
        successes += meta["success"]
        if meta["success"]:
            peg = env.unwrapped.mw.data.qpos[9:12]
            assert np.all(peg[:2] >= PEG_LOW - 0.02) and np.all(peg[:2] <= PEG_HIGH + 0.02)
            assert np.linalg.norm(steps["state"][0, :3] - env.unwrapped.raw_obs[:3]) < 0.03  # back at the start
    assert successes >= 18, successes


def test_reversed_unplugging_replays_as_an_insertion():
    """Measured 19/20 when written (2026-12-04); a reversal that misses the grasp (the hand's
    lag, or the fingers' travel time ignored) replays 0-2/20."""
    easy, hard = make_env(EASY, cameras=()), make_env(HARD, cameras=())
    replayed = attempted = 0
    for seed in SEEDS:
        steps, meta = record_demo_episode(easy, make_expert(EASY, seed=seed), seed, to_rest=True)
        if not meta["success"]:
            continue
        attempted += 1
        reversed_steps, reversed_meta = reverse_recorded(steps, {**meta, "task": EASY})
        assert reversed_meta["task"] == HARD and reversed_meta["instruction"] == "peg insert side"
        hard.reset(seed=seed)
        copy_scene(easy, hard)
        info = {"success": False}
        for action in reversed_steps["action"]:
            _, _, terminated, truncated, info = hard.step(action)
            if terminated or truncated:
                break
        replayed += bool(info["success"])
    assert attempted >= 18 and replayed >= 0.85 * attempted, (replayed, attempted)


def test_meta_worlds_own_unplugging_is_no_reverse_pair(tmp_path):
    """peg-unplug-side has another object, wall and box range; reversing it is refused with the pairs,
    and a store of it reverses nothing."""
    env = make_env("metaworld/peg-unplug-side", cameras=())
    steps, meta = record_demo_episode(env, make_expert("metaworld/peg-unplug-side", seed=0), 0)
    with pytest.raises(ValueError, match=r"task 'metaworld/peg-unplug-side' has no registered reverse pair to "
                                         r"reverse into; pairs \(easy -> hard\): .*metaworld/peg-insert-side-reverse"):
        reverse_recorded(steps, {**meta, "task": "metaworld/peg-unplug-side"})
    easy = collect_demos(EASY, 2, tmp_path / "easy.zarr", cameras=(), to_rest=True, progress_bar=False)
    out = EpisodeStore.create(tmp_path / "reversed.zarr")
    assert reverse_into(out, EpisodeStore.open(easy.path), range(2)) == easy.stored
    assert set(out.meta["task"]) == {HARD} and set(out.meta["source"]) == {"reversed"}
