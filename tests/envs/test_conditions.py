"""EnvConditions: a task's env built under a start spread and disturbances."""

import numpy as np
import pytest

from robot_learn.envs import make_env
from robot_learn.envs.conditions import EnvConditions, StartSpreadWrapper
from robot_learn.envs.disturbances import DisturbanceWrapper


def test_default_conditions_build_the_plain_env():
    env = EnvConditions().make_env("stack", cameras=())
    assert type(env) is type(make_env("stack", cameras=())) and EnvConditions.of().is_default
    assert EnvConditions.of(disturbances=["nudge"], disturbance_probability=0.0).is_default


def test_conditions_wrap_the_env_and_every_reset_uses_the_spread():
    conditions = EnvConditions.of("narrow", ["nudge", "slip"], disturbance_probability=0.5, disturbance_seed=3)
    env = conditions.make_env("bin_place", cameras=())
    assert isinstance(env, DisturbanceWrapper) and isinstance(env.env, StartSpreadWrapper)
    assert conditions.describe() == "narrow + nudge p=0.5, slip p=0.5"
    narrow, plain = make_env("bin_place", cameras=()), make_env("bin_place", cameras=())
    for seed in (0, 1):
        obs, info = env.reset(seed=seed)
        np.testing.assert_array_equal(obs["env_state"],
                                      narrow.reset(seed=seed, options={"start_spread": "narrow"})[0]["env_state"])
        assert not np.array_equal(obs["env_state"], plain.reset(seed=seed)[0]["env_state"])
        assert info["disturbances"] == {"nudge": 0, "slip": 0}
    assert EnvConditions.of("wide", ["slip"]).describe() == "wide + slip"


@pytest.mark.parametrize("make, match", [
    (lambda: EnvConditions.of("middle"), r"unknown start_spread 'middle'; valid: wide, medium, narrow"),
    (lambda: EnvConditions.of(disturbances=["shove"]), r"unknown disturbance 'shove'; valid: nudge, slip"),
    (lambda: EnvConditions.of("narrow").make_env("pusht"),
     r"start_spread, drop_spot and disturbances are for our tabletop tasks \(stack, .*\); external task 'pusht'"),
])
def test_bad_conditions_are_refused_with_the_valid_choices(make, match):
    with pytest.raises(ValueError, match=match):
        make()
