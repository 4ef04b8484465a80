"""Mid-episode disturbances (``robot_learn.envs.disturbances``) on the real MuJoCo tasks."""

import gymnasium as gym
import numpy as np
import pytest

from robot_learn.envs import make_env, make_expert
from robot_learn.envs.disturbances import Disturbances, DisturbanceWrapper


def _hold_still(env):
    """A pose action that keeps the arm where it is, gripper open."""
    tcp, yaw = env.unwrapped.tcp_pose()
    return np.array([*tcp, yaw, 0.0], dtype=np.float32)


def _move_xy(env):
    return np.array(env.unwrapped.object_pose("move")[0][:2])


@pytest.mark.parametrize("name, distance", [("stack", 0.03), ("bin_place", 0.05)])
def test_a_nudge_moves_the_object_by_the_configured_distance(name, distance):
    env = DisturbanceWrapper(make_env(name, cameras=()),
                             Disturbances({"nudge": 1.0}, seed=0, nudge_distance=distance, nudge_steps=(2, 2)))
    _, info = env.reset(seed=0)
    assert info["disturbances"] == {"nudge": 0, "slip": 0}
    before = _move_xy(env)
    _, _, _, _, info = env.step(_hold_still(env))
    assert info["disturbance"] == "" and np.linalg.norm(_move_xy(env) - before) < 1e-3  # not yet
    _, _, _, _, info = env.step(_hold_still(env))
    assert info["disturbance"] == "nudge" and info["disturbances"] == {"nudge": 1, "slip": 0}
    after = _move_xy(env)
    assert abs(np.linalg.norm(after - before) - distance) < 0.002
    for _ in range(5):  # once only; the object rests where it was pushed
        _, _, _, _, info = env.step(_hold_still(env))
        assert info["disturbance"] == ""
    assert np.linalg.norm(_move_xy(env) - after) < 0.002 and info["disturbances"]["nudge"] == 1


def test_a_slip_opens_the_grasp_and_the_object_falls():
    env = DisturbanceWrapper(make_env("stack", cameras=()),
                             Disturbances({"slip": 1.0}, seed=0, slip_after=(3, 3), release_steps=4))
    obs, _ = env.reset(seed=1)
    expert = make_expert("stack", seed=1)
    expert.reset(env)
    core, rest_z = env.unwrapped, env.unwrapped.task.move_kind.rest_z
    for _ in range(60):
        carried_at = core.object_pose("move")[0][2]
        obs, _, _, _, info = env.step(expert.act(obs, env))
        if info["disturbance"] == "slip":
            break
    assert info["disturbance"] == "slip", "the expert never carried the cube"
    assert carried_at > rest_z + 0.02  # lifted when the grasp opened
    heights, events = [], []
    for _ in range(6):
        obs, _, _, _, info = env.step(expert.act(obs, env))
        heights.append(core.object_pose("move")[0][2])
        events.append(info["disturbance"])
    assert core.gripper_command() < 0.2  # opened although the expert still asked to hold
    assert not core.is_held()
    assert min(heights) < rest_z + 0.005  # fell back to the table
    assert events == [""] * 6 and info["disturbances"] == {"nudge": 0, "slip": 1}


def test_disturbances_are_drawn_from_the_episode_seed_with_their_probability():
    def draws(probabilities):
        return [Disturbances(probabilities, seed=7).draw(np.random.default_rng([7, s])) for s in range(300)]

    half = draws({"nudge": 0.5, "slip": 0.5})
    assert 110 < sum(d["nudge"] for d in half) < 190 and 110 < sum(d["slip"] for d in half) < 190
    assert all(1 <= d["nudge_step"] <= 10 and 3 <= d["slip_after"] <= 8 for d in half)
    # One kind's probability leaves the other's draws alone.
    only_nudge = draws({"nudge": 0.5})
    assert [d["nudge"] for d in only_nudge] == [d["nudge"] for d in half]
    assert [d["nudge_step"] for d in only_nudge] == [d["nudge_step"] for d in half]
    assert not any(d["slip"] for d in only_nudge)
    # The wrapper draws each episode from (seed, episode seed): the same seeds, the same
    # disturbances, whichever env instance runs them and in whatever order.
    envs = [DisturbanceWrapper(make_env("stack", cameras=()), Disturbances({"nudge": 0.5}, seed=7)) for _ in range(2)]
    seen = {}
    for env, seeds in zip(envs, ([3, 4, 5], [5, 3, 4])):
        for s in seeds:
            env.reset(seed=s)
            seen.setdefault(s, []).append(dict(env.schedule))
    assert all(a == b == half[s] | {"slip": False} for s, (a, b) in seen.items())


@pytest.mark.parametrize("make, match", [
    (lambda: Disturbances.of(["nudge", "shove"]), r"unknown disturbance 'shove'; valid: nudge, slip"),
    (lambda: Disturbances({"slip": 1.5}), r"probability of 'slip' must be in \[0, 1\], got 1.5"),
    (lambda: Disturbances.of(["nudge"], nudge_distance=0.0), r"nudge_distance must be > 0"),
    (lambda: Disturbances.of(["slip"], slip_after=(4, 2)), r"slip_after must be a range"),
    (lambda: DisturbanceWrapper(gym.make("CartPole-v1"), Disturbances.of(["nudge"])),
     r"disturbances \(nudge\) need one of our tabletop tasks; got CartPoleEnv"),
])
def test_bad_disturbance_settings_are_refused_with_a_one_line_error(make, match):
    with pytest.raises(ValueError, match=match):
        make()
