"""The kinematic filter re-times pose-mode episodes: static frames out, slow stretches
resampled, gripper events densified, actions rebuilt as absolute targets."""

import numpy as np
import pytest

from robot_learn.loops.kinematic_filter import KinematicFilter


def episode_from_poses(poses, gripper):
    """Per-step arrays of a pose-mode episode that visits ``poses`` (its actions: the next pose)."""
    poses = np.asarray(poses, dtype=np.float64)
    n = len(poses)
    state = np.zeros((n, 10), dtype=np.float32)
    state[:, 6:10] = poses
    action = np.zeros((n, 5), dtype=np.float32)
    action[:-1, :4], action[-1, :4] = poses[1:], poses[-1]
    action[:, 4] = gripper
    images = np.arange(n, dtype=np.uint8)[:, None, None, None].repeat(2, 1).repeat(2, 2).repeat(3, 3)
    return {"state": state, "action": action, "policy_action": action.copy(), "images/front": images,
            "phase": np.arange(n), "progress": np.linspace(0, 1, n, dtype=np.float32)}


def line(start, step, count):
    poses = np.zeros((count, 4))
    poses[:, 0] = start + step * np.arange(count)
    return poses


def test_static_frames_are_dropped_and_the_ends_kept():
    poses = np.concatenate([line(0.10, 0.01, 5), line(0.14, 0.0, 10), line(0.15, 0.01, 5)])
    times = KinematicFilter().times(poses, np.zeros(len(poses)))
    assert times[0] == 0 and times[-1] == len(poses) - 1
    assert not set(range(5, 15)) & set(times)  # the arm stood still at frames 4..14
    assert {0, 1, 2, 3, 4, 15, 16, 17, 18, 19} <= set(times)


def test_slow_stretches_are_resampled_toward_the_target_speed():
    poses = np.concatenate([line(0.10, 0.02, 4), line(0.161, 0.001, 24), line(0.204, 0.02, 4)])
    f = KinematicFilter(slow_speed=0.002, slow_min_frames=8, target_speed=0.004)
    times = f.times(poses, np.zeros(len(poses)))
    slow = [t for t in times if 3 <= t < 28]
    steps = np.diff(np.asarray(poses)[np.asarray(slow, dtype=int), 0])
    assert np.allclose(steps[:-1], 0.004) and steps[-1] <= 0.004 + 1e-9  # 1 mm/frame became 4 (to the end)
    assert {0, 1, 2, 3, 28, 29, 30, 31} <= set(times)  # the fast frames stay
    short = np.concatenate([line(0.10, 0.02, 4), line(0.161, 0.001, 5), line(0.185, 0.02, 4)])
    assert len(f.times(short, np.zeros(len(short)))) == len(short)  # too short to be a slow stretch


def test_frames_around_gripper_events_are_densified_and_never_dropped():
    poses = np.concatenate([line(0.10, 0.02, 10), line(0.28, 0.0, 10), line(0.28, 0.02, 10)])
    gripper = np.zeros(30)
    gripper[14:] = 1.0  # closes at frame 14, while the arm stands still
    f = KinematicFilter(gripper_window=3, densify=2)
    times = f.times(poses, gripper)
    assert np.allclose(times[(times >= 11) & (times <= 16)], np.arange(11, 16.5, 0.5))
    assert not set(range(18, 20)) & set(times)  # still, outside the window: dropped
    assert not any(t % 1 for t in times if t < 11 or t > 16)


def test_apply_rebuilds_actions_from_the_resampled_poses():
    poses = np.concatenate([line(0.10, 0.02, 6), line(0.20, 0.0, 6), line(0.20, 0.02, 6)])
    poses[:, 3] = np.linspace(3.0, 3.4, len(poses))  # the yaw wraps past pi
    poses[:, 3] = (poses[:, 3] + np.pi) % (2 * np.pi) - np.pi
    gripper = np.zeros(len(poses))
    gripper[7:] = 1.0  # its window (5..8) holds the wrap (between 6 and 7)
    steps = episode_from_poses(poses, gripper)
    out = KinematicFilter(gripper_window=2).apply(steps)
    times = KinematicFilter(gripper_window=2).times(poses, gripper)
    assert len(times) != len(poses) and all(len(v) == len(times) for v in out.values())
    ee = out["state"][:, 6:10]
    np.testing.assert_allclose(out["action"][:-1, :4], ee[1:], atol=1e-6)
    np.testing.assert_allclose(out["action"][-1, :4], ee[-1], atol=1e-6)
    np.testing.assert_array_equal(out["action"][:, 4], gripper[np.floor(times).astype(int)])
    np.testing.assert_array_equal(out["images/front"][:, 0, 0, 0], np.floor(times))
    assert np.all(np.abs(np.diff(np.unwrap(ee[:, 3]))) < 0.05)  # interpolated across the wrap, not through 0
    np.testing.assert_array_equal(out["policy_action"], out["action"])


def test_a_noisy_experts_episode_filtered_still_solves_its_task():
    from robot_learn.data import EpisodeRecorder
    from robot_learn.envs import make_env, make_expert
    from robot_learn.envs.demos import run_expert

    env = make_env("stack", cameras=())
    recorder = EpisodeRecorder(("state",))
    run_expert(env, make_expert("stack", noise=1.0, seed=3), 3, recorder)
    steps = recorder.steps()
    out = KinematicFilter().apply(steps)
    assert len(out["action"]) != len(steps["action"])
    env.reset(seed=3)
    for action in out["action"]:
        if env.step(action)[2]:
            break
    assert env.task.success(env), "the re-timed episode, replayed, did not stack the cube"


def test_bad_settings_and_non_pose_episodes_are_refused():
    with pytest.raises(ValueError, match="kinematic filter densify must be >= 1, got 0"):
        KinematicFilter(densify=0)
    with pytest.raises(ValueError, match="kinematic filter slow_speed must be >= 0, got -1"):
        KinematicFilter(slow_speed=-1)
    steps = episode_from_poses(line(0.1, 0.01, 5), np.zeros(5))
    steps["action"] = np.zeros((5, 6), dtype=np.float32)
    with pytest.raises(ValueError, match="rollout 7 has joint-target actions \\(action mode 'joint'\\)"):
        KinematicFilter().apply(steps, where="rollout 7")
