"""reset(options={"swap_roles": True}): the same scene with the other object named."""

import numpy as np
import pytest

from robot_learn.envs import make_env, make_expert

FORWARD = ("stack", "peg_insert", "bin_place")


@pytest.mark.parametrize("task", FORWARD)
def test_swapped_reset_shows_the_same_scene_with_the_other_object_named(task):
    env = make_env(task, cameras=("front",), image_size=64)
    try:
        plain, _ = env.reset(seed=7)
        colours = dict(env.unwrapped.colours)
        swapped, info = env.reset(seed=7, options={"swap_roles": True})
        swapped_colours = dict(env.unwrapped.colours)
    finally:
        env.close()
    # Identical pixels: every object kept its pose and colour.
    np.testing.assert_array_equal(plain["images"]["front"], swapped["images"]["front"])
    assert plain["instruction"] != swapped["instruction"]
    other = "target" if task == "stack" else "distractor"
    assert swapped_colours["move"] == colours[other] and swapped_colours[other] == colours["move"]
    assert f"the {colours[other]} " in swapped["instruction"]
    # The privileged state follows the roles: the object to move is now the other one.
    if task == "stack":
        np.testing.assert_allclose(swapped["env_state"][:3], plain["env_state"][7:10], atol=1e-4)
    assert not info["success"]


def test_success_follows_the_instruction_given():
    env = make_env("bin_place", cameras=())
    try:
        obs, _ = env.reset(seed=3, options={"swap_roles": True})
        expert = make_expert("bin_place", noise=0.0, seed=0)
        expert.reset(env)
        for _ in range(env.unwrapped.max_steps):
            obs, _, terminated, truncated, info = env.step(expert.act(obs, env))
            if terminated or truncated:
                break
        assert info["success"]  # the expert moved the cube the swapped instruction names
        # The cube the unswapped instruction named is still where it started.
        env.reset(seed=3)
        start_of_original = env.unwrapped.object_pose("move")[0].copy()
    finally:
        env.close()
    env2 = make_env("bin_place", cameras=())
    try:
        env2.reset(seed=3, options={"swap_roles": True})
        np.testing.assert_allclose(env2.unwrapped.object_pose("distractor")[0][:2], start_of_original[:2], atol=1e-3)
    finally:
        env2.close()


def test_reverse_tasks_refuse_to_swap_with_the_valid_tasks_named():
    env = make_env("unstack", cameras=())
    try:
        with pytest.raises(ValueError, match=r"only for forward tasks \(stack, peg_insert, bin_place\); 'unstack'"):
            env.reset(seed=0, options={"swap_roles": True})
    finally:
        env.close()


def test_swapped_state_saves_and_restores_exactly():
    env = make_env("stack", cameras=())
    try:
        env.reset(seed=5, options={"swap_roles": True})
        state = env.unwrapped.get_state()
        instruction = env.unwrapped.instruction
        env.reset(seed=6)
        obs = env.unwrapped.reset_to_state(state)
        assert obs["instruction"] == instruction
    finally:
        env.close()


@pytest.mark.parametrize("task", FORWARD)
def test_objects_lists_slots_by_colour_so_a_role_swap_leaves_it_unchanged(task):
    from robot_learn.envs.scene import COLOUR_NAMES

    env = make_env(task, cameras=())
    try:
        plain, _ = env.reset(seed=11)
        colours = dict(env.unwrapped.colours)
        swapped, _ = env.reset(seed=11, options={"swap_roles": True})
    finally:
        env.close()
    np.testing.assert_allclose(plain["objects"], swapped["objects"], atol=1e-6)  # only the words differ
    assert plain["objects"].shape == env.observation_space["objects"].shape
    slots = plain["objects"].reshape(3, -1)
    named = [COLOUR_NAMES[int(np.argmax(s[7:]))] for s in slots if s[7:].any()]
    assert named == sorted(colours.values(), key=COLOUR_NAMES.index)
    # The slot of the object to move holds its pose (env_state lists it first).
    move = named.index(colours["move"])
    np.testing.assert_allclose(slots[move, :7], plain["env_state"][:7], atol=1e-6)
    if task == "stack":
        assert not slots[2].any()  # two cubes only: the third slot is empty
