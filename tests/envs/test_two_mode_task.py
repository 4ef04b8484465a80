"""``bin_either``: two identical cubes, either into the bin (a task with two valid modes)."""

import gymnasium as gym
import numpy as np
import pytest

from robot_learn.envs import TASK_NAMES, make_env, make_expert, task_spec
from robot_learn.envs.registry import ALL_TASK_NAMES, family_task
from robot_learn.envs.reversal import easy_task_of
from robot_learn.envs.scene import COLOUR_NAMES
from robot_learn.envs.task_base import STILL_SPEED


def _run_expert(env, seed):
    obs, _ = env.reset(seed=seed)
    expert = make_expert("bin_either", seed=seed)
    expert.reset(env)
    first_held = None
    for _ in range(env.max_steps):
        obs, _, terminated, truncated, info = env.step(expert.act(obs, env))
        if first_held is None and env.is_held():
            first_held = env.task.moved_role(env)
        if terminated or truncated:
            break
    return expert.role, first_held, info


def test_it_is_registered_outside_the_paired_suite():
    spec = task_spec("bin_either")
    assert spec.family == "bin" and spec.variant == "forward"
    assert "bin_either" not in TASK_NAMES and "bin_either" in ALL_TASK_NAMES
    assert spec.gym_id in gym.registry
    with pytest.raises(ValueError, match="bin_either"):
        task_spec("bin_eitherr")
    with pytest.raises(ValueError, match="no registered easy reverse task"):
        easy_task_of("bin_either")


def test_the_two_cubes_look_alike_and_the_instruction_names_neither():
    env = make_env("bin_either", cameras=())
    for seed in range(5):
        obs, _ = env.reset(seed=seed)
        assert env.colours["move"] == env.colours["distractor"] != env.colours["target"]
        colour = env.colours["move"]
        assert colour in obs["instruction"] and f"the {colour} cube " not in obs["instruction"]
    # The objects observation carries both cubes (the same colour one-hot): the one nearer the
    # gripper, the bin, the other (env_state lists the move cube and the bin only).
    slots = obs["objects"].reshape(3, -1)
    tcp = env.tcp_pose()[0]
    near, far = sorted(("move", "distractor"), key=lambda r: np.linalg.norm(env.object_pose(r)[0] - tcp))
    assert [np.argmax(s[7:]) for s in slots] == [COLOUR_NAMES.index(env.colours[r]) for r in (near, "target", far)]
    for slot, role in zip(slots, (near, "target", far)):
        np.testing.assert_allclose(slot[:3], env.object_pose(role)[0], atol=1e-6)
    assert obs["env_state"].shape == (14,)


def test_expert_demos_hold_both_modes_and_succeed_with_either_cube():
    env = make_env("bin_either", cameras=())
    runs = [_run_expert(env, seed) for seed in range(10)]
    assert all(info["success"] for _, _, info in runs)
    assert {role for role, _, _ in runs} == {"move", "distractor"}
    for role, first_held, _ in runs:
        assert first_held == role  # the cube the expert chose is the one held (and placed)


def test_success_and_phase_follow_the_cube_in_the_bin():
    env = make_env("bin_either", cameras=())
    seed = next(s for s in range(20) if _run_expert(env, s)[0] == "distractor")
    role, _, info = _run_expert(env, seed)
    assert role == "distractor" and info["success"] and info["progress"] == 1.0
    assert env.task.placed_role(env) == "distractor" and env.task.moved_role(env) == "distractor"
    assert env.object_speed("distractor") < STILL_SPEED
    # The move cube never left the table: it alone would not be a success in bin_place terms.
    assert not env.task.in_bin(env, "move")


def test_expert_is_reproducible_from_its_seed():
    env = make_env("bin_either", cameras=())
    assert [_run_expert(env, s)[0] for s in range(6)] == [_run_expert(env, s)[0] for s in range(6)]


def test_it_has_no_reverse_variant():
    with pytest.raises(ValueError, match="forward variant only"):
        type(family_task("bin_either"))(forward=False)


def test_the_cubes_stand_apart_so_the_two_modes_part_from_the_start():
    env = make_env("bin_either", cameras=())
    gap = env.task.min_bearing_gap
    for seed in range(20):
        env.reset(seed=seed)
        bearings = [np.arctan2(*env.object_pose(role)[0][1::-1]) for role in ("move", "distractor")]
        assert abs(bearings[0] - bearings[1]) >= gap
