"""The critic filter: a value over (observation, action chunk) learned from the hard task's
rollouts cuts reversed episodes where the task is done and drops frames that make no progress."""

import numpy as np
import pytest

from robot_learn.data import EpisodeRecorder
from robot_learn.envs import make_env, make_expert, reverse_steps
from robot_learn.envs.demos import run_expert
from robot_learn.loops.critic_filter import (
    CriticFilter, apply_critic, flip_short_runs, load_critic, mc_values, train_critic, zero_reward_gae,
)

KEYS = ("state", "env_state")


def test_monte_carlo_values_and_zero_reward_advantages():
    np.testing.assert_allclose(mc_values(4, True, 0.5), [0.125, 0.25, 0.5, 1.0])
    np.testing.assert_array_equal(mc_values(3, False, 0.5), np.zeros(3))
    # A value that rises as fast as the discount: no frame has an advantage; a frame that
    # stands still (same value as the one before) has a negative one.
    v = mc_values(6, True, 0.9)
    np.testing.assert_allclose(zero_reward_gae(v, True, 0.9, 0.95), 0.0, atol=1e-12)
    stalled = np.array([0.5, 0.5, 0.6, 0.7, 0.8, 0.9])
    assert zero_reward_gae(stalled, True, 0.9, 0.0)[0] < 0 < zero_reward_gae(stalled, True, 0.9, 0.0)[1]


def test_short_runs_flip_and_the_ends_stay_kept():
    keep = np.array([1, 1, 1, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1, 1, 0], dtype=bool)
    out = flip_short_runs(keep, 3)
    # The one dropped frame among kept ones is kept; the five dropped in a row stay dropped;
    # the last frame is kept whatever its run.
    np.testing.assert_array_equal(out, [1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1])


class OpenHand:
    """The expert with its gripper never closing: it goes through the motions and fails."""

    def __init__(self, expert):
        self.expert = expert

    def __getattr__(self, name):  # phase, at_rest
        return getattr(self.expert, name)

    def reset(self, env):
        self.expert.reset(env)

    def act(self, obs, env):
        action = np.array(self.expert.act(obs, env), dtype=np.float32)
        action[4] = 0.0
        return action


def _episodes(task, seeds, to_rest=False, fail=False):
    env = make_env(task, cameras=())
    out = []
    for seed in seeds:
        recorder = EpisodeRecorder(KEYS)
        expert = make_expert(task, seed=seed)
        _, infos = run_expert(env, OpenHand(expert) if fail else expert, seed, recorder, to_rest=to_rest)
        out.append((recorder.steps(), bool(infos[-1]["success"]), env.get_state()))
    return out


@pytest.fixture(scope="module")
def stack_critic():
    """Trained on stack 'rollouts': 16 expert successes and 16 failures (the gripper never closes)."""
    wins = _episodes("stack", range(16))
    losses = _episodes("stack", range(100, 116), fail=True)
    assert all(ok for _, ok, _ in wins) and not any(ok for _, ok, _ in losses)
    settings = CriticFilter(steps=1500)
    return train_critic("stack", [(s, ok) for s, ok, _ in wins + losses], settings)


def test_the_value_learns_that_successes_end_high_and_failures_stay_low(stack_critic):
    """Held-out seeds. Measured: last frames of successes about 0.9-1.0, failures' frames 0.0-0.3."""
    wins, losses = _episodes("stack", range(200, 204)), _episodes("stack", range(300, 304), fail=True)
    for steps, _, _ in wins:
        v = stack_critic.values(steps)
        assert v[-1] > 0.8 and v[0] < v[-1]
    assert max(stack_critic.values(s).mean() for s, _, _ in losses) < 0.5


def test_a_reversed_episode_is_cut_where_stack_is_done_and_still_solves_it(stack_critic):
    """Unstack episodes to rest, reversed: the arm stacks the cube, then goes back to rest.
    The critic cuts the return to rest and the cut episodes, their actions rebuilt, still
    stack the cube from the same start. Measured on seeds 0-9: 49-54 frames cut to 37-44,
    all ten still succeed (without ``after_done`` the cut fell before the release, and
    none did)."""
    forward = make_env("stack", cameras=())
    for steps, ok, final in _episodes("unstack", range(3), to_rest=True):
        assert ok
        reversed_steps = reverse_steps(steps, where="test episode")
        cut = apply_critic(stack_critic, reversed_steps)
        assert len(cut["action"]) <= len(reversed_steps["action"]) - 5, (len(cut["action"]),
                                                                          len(reversed_steps["action"]))
        forward.reset_to_state(final)
        for action in cut["action"]:
            terminated = forward.step(action)[2]
            if terminated:
                break
        assert terminated


def test_a_saved_critic_loads_for_its_task_only(stack_critic, tmp_path):
    path = stack_critic.save(tmp_path / "critic")
    steps = _episodes("stack", [500])[0][0]
    np.testing.assert_allclose(load_critic(path, "stack").values(steps), stack_critic.values(steps), atol=1e-6)
    with pytest.raises(ValueError, match=r"was trained on task 'stack'; it cannot judge 'bin_place' episodes"):
        load_critic(path, "bin_place")
    with pytest.raises(ValueError, match=r"critic checkpoint .* has no critic.yaml"):
        load_critic(tmp_path / "nowhere", "stack")
    (path / "model.safetensors").write_bytes(b"not a tensor file")
    with pytest.raises(ValueError, match=r"cannot load model.safetensors"):
        load_critic(path, "stack")


def test_episodes_the_critic_cannot_read_are_refused_naming_the_key(stack_critic):
    steps = _episodes("stack", [600])[0][0]
    with pytest.raises(ValueError, match=r"episode 3 has no 'env_state', which the critic reads"):
        stack_critic.values({k: v for k, v in steps.items() if k != "env_state"}, where="episode 3")
    wide = {**steps, "state": np.concatenate([steps["state"], steps["state"]], axis=1)}
    with pytest.raises(ValueError, match=r"'state' has width 20; the critic was trained on width 10"):
        stack_critic.values(wide)


@pytest.mark.parametrize("settings, match", [
    ({"gamma": 1.5}, r"critic filter gamma must be in \(0, 1\], got 1.5"),
    ({"min_run": 0}, r"critic filter min_run must be >= 1, got 0"),
    ({"after_done": -1}, r"critic filter after_done must be >= 0, got -1"),
])
def test_bad_critic_settings_are_refused(settings, match):
    with pytest.raises(ValueError, match=match):
        CriticFilter(**settings)
