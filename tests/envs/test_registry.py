"""Task names, specs, gymnasium ids and the factories' error messages."""

import gymnasium as gym
import numpy as np
import pytest

import robot_learn.envs as envs
from robot_learn.envs import TASK_NAMES, make_env, make_expert, task_spec

GYM_IDS = {
    "stack": "robot_learn/StackCube-v0",
    "unstack": "robot_learn/UnstackCube-v0",
    "peg_insert": "robot_learn/PegInsert-v0",
    "peg_remove": "robot_learn/PegRemove-v0",
    "bin_place": "robot_learn/BinPlace-v0",
    "bin_take": "robot_learn/BinTake-v0",
}


def test_task_names_are_the_contract_tuple():
    assert TASK_NAMES == ("stack", "unstack", "peg_insert", "peg_remove", "bin_place", "bin_take")


def test_unknown_task_error_names_it_and_lists_valid_tasks():
    with pytest.raises(ValueError) as err:
        make_env("stak")
    msg = str(err.value)
    assert "'stak'" in msg
    for name in TASK_NAMES:
        assert name in msg
    with pytest.raises(ValueError, match="valid tasks: stack, unstack"):
        task_spec("nope")
    with pytest.raises(ValueError, match="unknown task 'x'"):
        make_expert("x")


@pytest.mark.parametrize("name", TASK_NAMES)
def test_specs_pair_each_forward_task_with_its_reverse_partner(name):
    spec = task_spec(name)
    partner = task_spec(spec.partner)
    assert spec.gym_id == GYM_IDS[name]
    assert partner.partner == name and partner.family == spec.family
    assert {spec.variant, partner.variant} == {"forward", "reverse"}
    assert 60 <= spec.max_steps <= 120


@pytest.mark.parametrize("name", ["stack", "bin_take"])
def test_gym_ids_are_registered_on_import_and_make_the_task(name):
    assert GYM_IDS[name] in gym.registry
    env = gym.make(GYM_IDS[name], cameras=())
    obs, info = env.reset(seed=3)
    assert env.unwrapped.name == name
    direct = make_env(name, cameras=())
    obs2, _ = direct.reset(seed=3)
    np.testing.assert_array_equal(obs["env_state"], obs2["env_state"])
    assert obs["instruction"] == obs2["instruction"]
    env.close()


def test_registration_is_idempotent():
    before = len(gym.registry)
    envs.register_envs()
    assert len(gym.registry) == before


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"action_mode": "torque"}, "unknown action_mode 'torque'; valid modes: pose, joint"),
        ({"cameras": ("top",)}, "unknown camera 'top'; valid cameras: front, wrist"),
        ({"max_steps": 0}, "max_steps must be >= 1"),
        ({"image_size": 0}, "image_size must be positive"),
    ],
)
def test_bad_env_options_raise_clear_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_env("stack", **kwargs)


def test_negative_expert_noise_is_rejected():
    with pytest.raises(ValueError, match="noise must be a finite number >= 0"):
        make_expert("stack", noise=-0.1)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_gymnasium_vector_envs_batch_observations_and_instructions(mode):
    # gymnasium's AsyncVectorEnv shared memory reads Text observations once at
    # start-up (they never update), so async vector envs need
    # shared_memory=False to carry the instruction.
    kwargs = {"shared_memory": False} if mode == "async" else {}
    venv = gym.make_vec("robot_learn/BinPlace-v0", num_envs=2, vectorization_mode=mode,
                        vector_kwargs=kwargs, cameras=())
    obs, _ = venv.reset(seed=[0, 1])
    expected = tuple(make_env("bin_place", cameras=()).reset(seed=s)[0]["instruction"] for s in (0, 1))
    assert obs["state"].shape == (2, 10) and obs["env_state"].shape == (2, 14)
    assert tuple(obs["instruction"]) == expected
    assert tuple(venv.get_attr("instruction")) == expected
    obs, reward, terminated, truncated, info = venv.step(venv.action_space.sample())
    assert reward.shape == (2,) and info["phase"].shape == (2,)
    venv.close()
