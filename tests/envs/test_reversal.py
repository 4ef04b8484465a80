"""Time-reversed reverse-task (easy) episodes solve the forward (hard) task."""

import numpy as np
import pytest

from robot_learn.envs import record_expert_episode, replay_reversed, reverse_episode, task_spec

N_SEEDS = 20


def test_reverse_episode_pairs_reversed_poses_with_reversed_gripper_commands():
    poses = np.arange(4 * 4, dtype=float).reshape(4, 4)  # T + 1 = 4 observations
    gripper = np.array([0.0, 1.0, 1.0])  # T = 3 commands
    actions = reverse_episode(poses, gripper)
    assert actions.shape == (3, 5) and actions.dtype == np.float32
    # Reversed sequence rp = poses[::-1]; action[t, :4] = rp[t + 1], action[t, 4] = rg[t].
    np.testing.assert_array_equal(actions[:, :4], poses[2::-1])
    np.testing.assert_array_equal(actions[:, 4], gripper[::-1])


def test_reverse_episode_rejects_malformed_input():
    with pytest.raises(ValueError, match=r"ee_poses must have shape \[N, 4\]"):
        reverse_episode(np.zeros((5, 3)), np.zeros(4))
    with pytest.raises(ValueError, match="need at least 2 poses"):
        reverse_episode(np.zeros((1, 4)), np.zeros(1))


def test_replay_refuses_forward_episodes():
    ep = record_expert_episode("stack", 0)
    with pytest.raises(ValueError, match="'stack' is a forward task"):
        replay_reversed(ep)


@pytest.mark.parametrize("reverse_task", ["unstack", "peg_remove", "bin_take"])
def test_reversed_reverse_episodes_succeed_in_the_forward_task(reverse_task):
    forward = task_spec(reverse_task).partner
    successes = 0
    for seed in range(N_SEEDS):
        ep = record_expert_episode(reverse_task, seed)
        assert ep.success
        result = replay_reversed(ep)
        # The replay starts where the reverse episode ended: not yet solved.
        assert result["infos"][0]["success"] is False
        successes += result["success"]
    rate = successes / N_SEEDS
    print(f"reversal {reverse_task} -> {forward}: {successes}/{N_SEEDS} = {rate:.2f}")
    assert rate >= 0.7
