"""Reset-free cycles: each leg starts from the scene the other task's leg left, and the
count of legs solved in a row stops at the first failure."""

import numpy as np
import pytest

from robot_learn.envs import make_env, make_expert
from robot_learn.loops.reset_free import reset_free_cycles, summarize


class Idle:
    """An actor that holds the arm where it is: it never solves anything."""

    def reset(self, env):
        tcp, yaw = env.unwrapped.tcp_pose()
        self.hold = np.array([*tcp, yaw, 0.0], dtype=np.float32)

    def act(self, obs, env):
        return self.hold


class Watched:
    """An actor that notes, at each leg's start, whether its scene is the one the other env left."""

    def __init__(self, actor, envs, starts):
        self.actor, self.envs, self.starts = actor, envs, starts

    def reset(self, env):
        other = next(e for e in self.envs if e is not env)
        self.starts.append(np.array_equal(env.unwrapped.data.qpos, other.unwrapped.data.qpos))
        self.actor.reset(env)

    def act(self, obs, env):
        return self.actor.act(obs, env)


@pytest.mark.parametrize("hard, easy", [("stack", "unstack"), ("peg_insert", "peg_remove")])
def test_experts_chain_legs_without_resets(hard, easy):
    envs, starts = [], []

    def make(task):
        envs.append(make_env(task, cameras=()))
        return envs[-1]

    actors = {t: Watched(make_expert(t, seed=1), envs, starts) for t in (hard, easy)}
    result = reset_free_cycles(hard, actors, legs=4, seed=1, max_steps=150, make_env=make)
    assert starts == [False, True, True, True]  # only the first leg starts from a reset
    assert [t for t, _, _ in result.legs] == [hard, easy, hard, easy]
    assert result.consecutive_successes == 4 and all(0 < steps < 150 for _, _, steps in result.legs)
    numbers = summarize([result])
    assert numbers == {"cycles": 1, "consecutive_successes": [4], "longest": 4,
                       "mean_steps_to_success": np.mean([s for _, _, s in result.legs])}


def test_the_cycle_stops_at_the_first_failed_leg():
    result = reset_free_cycles("stack", {"stack": make_expert("stack", seed=2), "unstack": Idle()}, legs=6, seed=2,
                               max_steps=60)
    assert result.legs[0][:2] == ("stack", True) and result.legs[1] == ("unstack", False, 60)
    assert len(result.legs) == 2 and result.consecutive_successes == 1
    numbers = summarize([result, reset_free_cycles("stack", {"stack": Idle(), "unstack": Idle()}, legs=6, seed=3,
                                                   max_steps=20)])
    assert numbers["consecutive_successes"] == [1, 0] and numbers["longest"] == 1
    assert numbers["mean_steps_to_success"] == result.legs[0][2]
