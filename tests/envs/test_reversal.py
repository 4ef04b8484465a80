"""Time-reversed reverse-task (easy) episodes solve the forward (hard) task."""

import re

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
    with pytest.raises(ValueError, match="task 'stack' has no registered reverse pair to reverse into"):
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


# ----- stored episodes: reversal into a store -----------------------------------------------
from robot_learn.data import EpisodeRecorder, EpisodeStore  # noqa: E402
from robot_learn.envs import (  # noqa: E402
    easy_task_of, forward_task_of, make_env, make_expert, reverse_into, reverse_pairs, reverse_steps,
)
from robot_learn.envs.demos import collect_demos, run_expert  # noqa: E402
from robot_learn.envs.reversal import forward_instruction, settled_commands, trim_after_release  # noqa: E402

PAIRS = re.escape("pairs (easy -> hard): unstack -> stack, peg_remove -> peg_insert, bin_take -> bin_place, "
                  "metaworld/peg-insert-side-reverse -> metaworld/peg-insert-side")


def synthetic_episode(length=6):
    """A pose-mode episode whose actions are the poses reached next (as an expert's are)."""
    poses = np.zeros((length + 1, 4))
    poses[:, 0] = 0.15 + 0.01 * np.arange(length + 1)
    poses[:, 3] = 0.1 * np.arange(length + 1)
    state = np.zeros((length, 10), dtype=np.float32)
    state[:, 6:10] = poses[:-1]
    action = np.zeros((length, 5), dtype=np.float32)
    action[:, :4] = poses[1:]
    action[:, 4] = [0, 0, 1, 1, 1, 0][:length]
    images = np.arange(length, dtype=np.uint8)[:, None, None, None].repeat(4, 1).repeat(4, 2).repeat(3, 3)
    return {"state": state, "env_state": np.arange(length * 14, dtype=np.float32).reshape(length, 14),
            "images/front": images, "action": action, "policy_action": action.copy(),
            "intervention": np.zeros(length, dtype=bool), "reward": np.zeros(length, dtype=np.float32),
            "progress": np.linspace(0, 1, length, dtype=np.float32), "phase": np.arange(length),
            "timestamp": 100.0 + 0.1 * np.arange(length)}


def test_reverse_steps_reverses_frames_and_rebuilds_absolute_pose_actions():
    steps = synthetic_episode()
    out = reverse_steps(steps)
    for key in ("state", "env_state", "images/front", "phase"):
        np.testing.assert_array_equal(out[key], steps[key][::-1])
    poses, grip = out["state"][:, 6:10], steps["action"][:, 4]
    # action[t] = (pose of the next frame, gripper of this frame); the last frame holds.
    np.testing.assert_allclose(out["action"][:-1, :4], poses[1:])
    np.testing.assert_allclose(out["action"][-1, :4], poses[-1])
    # Reversed frame t is original frame T-1-t, entered by command T-2-t: a release becomes a grasp.
    np.testing.assert_array_equal(out["action"][:, 4], [1, 1, 1, 0, 0, 0])
    np.testing.assert_array_equal(out["action"][:-1, 4], grip[::-1][1:])
    np.testing.assert_array_equal(out["policy_action"], out["action"])
    np.testing.assert_array_equal(out["reward"], [0, 0, 0, 0, 0, 1])
    np.testing.assert_allclose(out["progress"], 1 - steps["progress"][::-1])
    assert np.all(np.diff(out["timestamp"]) > 0) and not out["intervention"].any()


def test_reversing_non_pose_actions_names_the_action_mode():
    joint = synthetic_episode()
    joint["action"] = np.zeros((6, 6), dtype=np.float32)
    with pytest.raises(ValueError, match=r"^episode 3 of s\.zarr has joint-target actions \(action mode 'joint'\), "
                                         r"not absolute end-effector poses"):
        reverse_steps(joint, where="episode 3 of s.zarr")
    relative = synthetic_episode()
    relative["action"][:, :4] = np.diff(np.concatenate([relative["state"][:, 6:10], relative["action"][-1:, :4]]),
                                        axis=0)
    with pytest.raises(ValueError, match=r"relative pose actions \(action mode 'relative'"):
        reverse_steps(relative)
    planar = synthetic_episode()
    planar["action"] = planar["action"][:, :2]
    with pytest.raises(ValueError, match=r"2-wide actions \(no action mode of these tasks\)"):
        reverse_steps(planar)


def delta_episode():
    """A Meta-World episode (4-wide displacements over a 4-wide state: hand x, y, z, opening):
    the gripper closes at row 2 and the fingers take rows 3-5 to follow."""
    action = np.zeros((9, 4), dtype=np.float32)
    action[:, 0] = np.arange(1, 10) / 10
    action[:, 3] = [-1, -1, 1, 1, 1, 1, 1, 1, 1]
    state = np.zeros((9, 4), dtype=np.float32)
    state[:, 0] = np.cumsum(np.concatenate([[0], action[:-1, 0]])) * 0.01
    state[:, 3] = [1, 1, 1, 0.8, 0.5, 0.3, 0.3, 0.3, 0.3]
    return {"state": state, "env_state": np.arange(9 * 17, dtype=np.float32).reshape(9, 17), "action": action}


def test_meta_world_displacements_reverse_negated_with_the_gripper_moved_by_the_fingers_travel():
    steps = delta_episode()
    out = reverse_steps(steps)
    np.testing.assert_array_equal(out["state"], steps["state"][::-1])
    # Reversed row t undoes original transition T-2-t: its displacement negated; the last row holds.
    np.testing.assert_allclose(out["action"][:-1, :3], -steps["action"][-2::-1, :3])
    np.testing.assert_array_equal(out["action"][-1, :3], 0)
    # The close command of row 2 moves the fingers on frames 3-4; they rest from frame 5. Reversed
    # (row t is frame 8-t), the open command comes at row 3 (frame 5), so the fingers move on
    # reversed frames 4-5, as the frames they show (4, 3) had them. The "led into the frame" rule
    # alone would open them from row 6 on, after the frames that show them open.
    np.testing.assert_array_equal(out["action"][:, 3], [1, 1, 1, -1, -1, -1, -1, -1, -1])
    assert settled_commands(steps["action"][:, 3], steps["state"][:, 3]).tolist() == [-1] * 5 + [1] * 4
    # Trimmed 2 rows after the reversed release (row 3), as pose-mode episodes are.
    assert len(trim_after_release(out, 2)["action"]) == 5
    # Fingers that never move after a change (nothing to wait for): the change stays where it is.
    assert settled_commands(np.array([-1, 1, 1]), np.ones(3)).tolist() == [-1, 1, 1]


def test_tasks_without_a_reverse_pair_are_refused_with_the_pairs():
    assert reverse_pairs() == {"unstack": "stack", "peg_remove": "peg_insert", "bin_take": "bin_place",
                               "metaworld/peg-insert-side-reverse": "metaworld/peg-insert-side"}
    assert easy_task_of("peg_insert") == "peg_remove" and forward_task_of("bin_take") == "bin_place"
    with pytest.raises(ValueError, match=f"task 'stack' has no registered reverse pair to reverse into; {PAIRS}$"):
        forward_task_of("stack")
    with pytest.raises(ValueError, match=f"task 'unstack' has no registered easy reverse task .*; {PAIRS}$"):
        easy_task_of("unstack")
    with pytest.raises(ValueError, match=f"task 'pusht' has no registered easy reverse task .*; {PAIRS}$"):
        easy_task_of("pusht")


@pytest.mark.parametrize("easy", ["unstack", "peg_remove", "bin_take"])
def test_forward_instruction_words_the_same_scene_as_the_forward_env_does(easy):
    env, forward = make_env(easy, cameras=()), make_env(forward_task_of(easy), cameras=())
    for seed in range(6):
        env.reset(seed=seed)
        forward.set_state(env.get_state())
        assert forward_instruction(easy, env.instruction) == forward.instruction
    with pytest.raises(ValueError, match=f"instruction 'fly away' matches none of the '{easy}' templates: "):
        forward_instruction(easy, "fly away")


def test_episodes_to_rest_end_back_at_the_start_pose():
    env = make_env("unstack", cameras=())
    recorder = EpisodeRecorder(("state",))
    final, infos = run_expert(env, make_expert("unstack", seed=0), 0, recorder, to_rest=True)
    first_success = next(i for i, info in enumerate(infos) if info["success"])
    assert infos[-1]["success"] and len(infos) > first_success + 5  # it went on past success
    np.testing.assert_allclose(final["state"][6:10], recorder.steps()["state"][0, 6:10], atol=0.006)


@pytest.mark.parametrize("easy, trim", [("unstack", None), ("peg_remove", None), ("bin_take", None),
                                         ("peg_remove", 4)])
def test_stored_easy_episodes_reversed_into_a_store_solve_the_hard_task(tmp_path, easy, trim):
    hard = forward_task_of(easy)
    env, forward = make_env(easy, cameras=()), make_env(hard, cameras=())
    finals = []
    with EpisodeStore.create(tmp_path / "easy.zarr") as store:
        for seed in range(2):
            recorder = EpisodeRecorder(("state", "env_state"))
            obs, infos = run_expert(env, make_expert(easy, seed=seed), seed, recorder, to_rest=True)
            finals.append(env.get_state())
            recorder.commit(store, {"task": easy, "instruction": obs["instruction"], "seed": seed,
                                    "success": bool(infos[-1]["success"]), "source": "demo"})
        with EpisodeStore.create(tmp_path / "hard.zarr") as out:
            assert reverse_into(out, store, store.view().episodes, trim=trim) == 2
    out = EpisodeStore.open(tmp_path / "hard.zarr")
    if trim is not None:  # trimmed: the return to rest is gone, the release kept
        for e in range(2):
            closed = out.episode(e)["steps"]["action"][:, 4] > 0.5
            release = int(np.flatnonzero(closed[:-1] & ~closed[1:])[-1]) + 1
            assert len(closed) == release + trim < store.episode(e)["steps"]["action"].shape[0] - 5
    assert list(out.meta["task"]) == [hard] * 2 and list(out.meta["source"]) == ["reversed"] * 2
    start = forward.reset(seed=0)[0]["state"]
    for e, final in enumerate(finals):
        steps = out.episode(e)["steps"]
        # The reversed episode starts where the hard task's episodes start: the arm at rest, open.
        np.testing.assert_allclose(steps["state"][0, 6:10], start[6:10], atol=0.02)  # m and rad
        assert steps["action"][0, 4] == 0.0
        forward.reset_to_state(final)
        assert out.meta["instruction"][e] == forward.instruction
        for t, action in enumerate(steps["action"]):
            terminated = forward.step(action)[2]
            if terminated:
                break
        assert terminated, f"reversed {easy} episode {e} did not solve {hard}"


def test_trimming_after_the_release_keeps_whole_episodes_without_one_and_refuses_negatives():
    from robot_learn.envs.reversal import trim_after_release

    steps = synthetic_episode()  # gripper 0, 0, 1, 1, 1, 0: released at row 5
    assert len(trim_after_release(steps, 0)["action"]) == 5 and len(trim_after_release(steps, 3)["action"]) == 6
    assert len(trim_after_release(steps, None)["state"]) == 6
    never = {**steps, "action": np.zeros_like(steps["action"])}
    assert len(trim_after_release(never, 2)["action"]) == 6
    with pytest.raises(ValueError, match="trim_after_release must be >= 0 rows, got -1"):
        trim_after_release(steps, -1)


def test_pixel_stores_reverse_their_images(tmp_path):
    collect_demos("unstack", 1, tmp_path / "px.zarr", cameras=("front",), image_size=24, to_rest=True,
                  progress_bar=False)
    store = EpisodeStore.open(tmp_path / "px.zarr")
    with EpisodeStore.create(tmp_path / "rev.zarr") as out:
        reverse_into(out, store, [0])
    images = EpisodeStore.open(tmp_path / "rev.zarr").read("images/front")
    np.testing.assert_array_equal(images, store.read("images/front")[::-1])
    assert images.shape[1:] == (24, 24, 3)


def test_reversing_a_store_of_a_task_without_a_pair_lists_the_pairs(tmp_path):
    collect_demos("stack", 1, tmp_path / "s.zarr", cameras=(), progress_bar=False)
    store = EpisodeStore.open(tmp_path / "s.zarr")
    with EpisodeStore.create(tmp_path / "rev.zarr") as out, pytest.raises(
            ValueError, match=f"task 'stack' has no registered reverse pair to reverse into; {PAIRS}"):
        reverse_into(out, store, [0])
