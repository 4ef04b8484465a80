"""Start distributions: ``reset(options={"start_spread": ...})`` on every tabletop task.

``wide`` (the default) is the distribution the tasks always had; ``narrow`` keeps each
object near one nominal layout of its task, ``medium`` less near.
"""

import hashlib
import math

import numpy as np
import pytest

from robot_learn.envs import TASK_NAMES, make_env, make_expert
from robot_learn.envs.start_spread import MEDIUM, NARROW, START_SPREADS
from robot_learn.envs.task_base import ANGLE_RANGE, RADIUS_RANGE, yaw_of_quat

# sha256 (first 16 hex digits) of params, template and colours of seeds 0..4, recorded
# with the sampler as it was before start spreads existed (commit a8f72c2).
BEFORE_SPREADS = {
    "stack": "1ca435900412a9ee",
    "unstack": "996b039f08b94675",
    "peg_insert": "ced7838a05661966",
    "peg_remove": "c447cb8f3f7c9c33",
    "bin_place": "b75104bb4ea96be3",
    "bin_take": "7bd1f2fc4972b00d",
}
# The reachable ring's bounding box (x, y): every spread's objects lie inside it.
RING_BOX = np.array([[RADIUS_RANGE[0] * math.cos(ANGLE_RANGE[1]), -RADIUS_RANGE[1] * math.sin(ANGLE_RANGE[1])],
                     [RADIUS_RANGE[1], RADIUS_RANGE[1] * math.sin(ANGLE_RANGE[1])]])


def _reset_digest(env, options=None):
    h = hashlib.sha256()
    for seed in range(5):
        env.reset(seed=seed, options=options)
        h.update(env.params.tobytes())
        h.update(f"{env.template_index}{sorted(env.colours.items())}".encode())
    return h.hexdigest()[:16]


@pytest.mark.parametrize("name", TASK_NAMES)
def test_default_resets_are_the_ones_from_before_spreads_existed(name):
    env = make_env(name, cameras=())
    assert _reset_digest(env) == BEFORE_SPREADS[name]
    # Asking for "wide" is the default, to the last bit of the whole scene after settling.
    for seed in range(3):
        env.reset(seed=seed)
        default = env.get_state()
        env.reset(seed=seed, options={"start_spread": "wide"})
        np.testing.assert_array_equal(env.get_state(), default)


def _poses(name, spread, seeds):
    """Per seed: (move x, move y, target x, target y) after the reset, and the move object's yaw."""
    env = make_env(name, cameras=())
    xy, yaw = [], []
    for seed in seeds:
        obs, _ = env.reset(seed=seed, options={"start_spread": spread})
        xy.append(np.concatenate([obs["env_state"][0:2], obs["env_state"][7:9]]))
        yaw.append(env.params[2])
    return np.array(xy), np.array(yaw)


@pytest.mark.parametrize("name", TASK_NAMES)
def test_narrow_resets_lie_inside_a_smaller_box_than_wide_ones(name):
    seeds = range(100, 130)
    narrow, narrow_yaw = _poses(name, "narrow", seeds)
    wide, wide_yaw = _poses(name, "wide", seeds)
    for cols in ((0, 1), (2, 3)):  # the object to move, then the target
        n, w = narrow[:, cols], wide[:, cols]
        n_box, w_box = np.ptp(n, axis=0), np.ptp(w, axis=0)
        # Narrow: within the nominal layout +- (2 cm of radius, 0.12 rad of bearing),
        # 1 cm of settling and the reverse tasks' 4 mm offset included.
        assert np.all(n_box < 2 * (NARROW.bearing * RADIUS_RANGE[1] + 0.01)), (cols, n_box)
        assert np.all(n_box < 0.5 * w_box), (cols, n_box, w_box)
        for pts in (n, w):
            assert np.all(pts >= RING_BOX[0] - 0.01) and np.all(pts <= RING_BOX[1] + 0.01)
    assert np.ptp(narrow_yaw) <= 2 * NARROW.yaw + 1e-9 < np.ptp(wide_yaw)
    # Narrow resets still vary, and differ between seeds.
    assert np.all(np.ptp(narrow, axis=0) > 0.005)


@pytest.mark.parametrize("name", ["stack", "peg_insert", "bin_place"])
def test_the_expert_succeeds_from_narrow_starts(name):
    env = make_env(name, cameras=())
    for seed in (0, 1):
        obs, _ = env.reset(seed=seed, options={"start_spread": "narrow"})
        expert = make_expert(name, seed=seed)
        expert.reset(env)
        for _ in range(env.max_steps):
            obs, _, terminated, truncated, info = env.step(expert.act(obs, env))
            if terminated or truncated:
                break
        assert info["success"], (name, seed)


@pytest.mark.parametrize("spread", [NARROW, MEDIUM], ids=lambda s: s.name)
def test_narrow_and_medium_layouts_jitter_around_the_nominal_one(spread):
    env = make_env("bin_place", cameras=())
    nominal = env.task.nominal_params()
    env.reset(seed=3, options={"start_spread": spread.name})
    for slot in (0, 3, 6):  # move, target, distractor
        r0, a0 = math.hypot(*nominal[slot:slot + 2]), math.atan2(nominal[slot + 1], nominal[slot])
        r, a = math.hypot(*env.params[slot:slot + 2]), math.atan2(env.params[slot + 1], env.params[slot])
        assert abs(r - r0) <= spread.radius + 1e-9 and abs(a - a0) <= spread.bearing + 1e-9
    _, quat = env.object_pose("move")
    assert abs(math.remainder(env.params[2] - nominal[2], 2 * math.pi)) <= spread.yaw
    assert abs(math.remainder(yaw_of_quat(quat) - env.params[2], math.pi / 2)) < 0.05


def test_an_unknown_start_spread_is_refused_with_the_valid_ones():
    env = make_env("stack", cameras=())
    with pytest.raises(ValueError, match=r"unknown start_spread 'middle'; valid: wide, medium, narrow"):
        env.reset(seed=0, options={"start_spread": "middle"})
    assert list(START_SPREADS) == ["wide", "medium", "narrow"]
