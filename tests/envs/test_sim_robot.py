import numpy as np
import pytest

from robot_learn.envs import SimRobot, SimRobotError, make_env
from robot_learn.hardware import JOINT_NAMES, Robot


def test_sim_robot_satisfies_the_robot_protocol_and_matches_the_env():
    robot = SimRobot("stack", cameras=(), max_steps=5)
    assert isinstance(robot, Robot)
    robot.connect()
    obs = robot.reset(seed=3)
    env = make_env("stack", cameras=())
    env_obs, _ = env.reset(seed=3)
    np.testing.assert_allclose(obs["state"], env_obs["state"])
    assert [obs[j] for j in JOINT_NAMES] == pytest.approx(list(env_obs["state"][:6]))
    assert set(obs["info"]) >= {"success", "progress", "phase"} and "joints" in obs["timestamps"]
    action = np.append(obs["state"][6:10], 0.0).astype(np.float32)
    sent = robot.send_action({"x": action[0], "y": action[1], "z": action[2] + 0.01, "yaw": action[3], "gripper": 0})
    env_step = env.step(np.array([action[0], action[1], action[2] + 0.01, action[3], 0.0], dtype=np.float32))
    np.testing.assert_allclose(robot.get_observation()["state"], env_step[0]["state"], atol=1e-6)
    assert sent["z"] == pytest.approx(float(action[2]) + 0.01)
    robot.disconnect()


def test_observation_spec_names_every_array_key_of_the_observation_with_its_shape():
    robot = SimRobot("stack", cameras=("front",), image_size=32, max_steps=5)
    spec = robot.observation_spec()  # known before connecting
    assert spec == {"env_state": (14,), "images/front": (32, 32, 3), "objects": spec["objects"], "state": (10,)}
    robot.connect()
    obs = robot.reset(seed=0)
    for key, shape in spec.items():
        value = obs["images"][key[7:]] if key.startswith("images/") else obs[key]
        assert np.asarray(value).shape == shape, key
    robot.disconnect()


def test_sim_robot_refuses_nan_and_use_out_of_order():
    robot = SimRobot("stack", cameras=(), max_steps=2)
    with pytest.raises(SimRobotError, match="not connected"):
        robot.get_observation()
    robot.connect()
    with pytest.raises(SimRobotError, match="reset"):
        robot.send_action(np.zeros(5, dtype=np.float32))
    obs = robot.reset(seed=0)
    with pytest.raises(ValueError):
        robot.send_action(np.full(5, np.nan, dtype=np.float32))
    hold = np.append(obs["state"][6:10], 0.0).astype(np.float32)
    robot.send_action(hold)
    robot.send_action(hold)
    assert robot.done
    with pytest.raises(SimRobotError, match="episode is over"):
        robot.send_action(hold)
    with pytest.raises(ValueError, match="unknown task 'stak'"):
        SimRobot("stak")


def test_sim_robot_runs_under_the_conditions_its_config_names():
    from robot_learn.envs import make_sim_robot

    robot = make_sim_robot("stack", cameras=(), start_spread="narrow", disturbances=["slip"],
                           disturbance_probability=0.5)
    robot.connect()
    narrow = make_env("stack", cameras=())
    for seed in (0, 1):
        obs = robot.reset(seed)
        np.testing.assert_array_equal(obs["env_state"],
                                      narrow.reset(seed=seed, options={"start_spread": "narrow"})[0]["env_state"])
        assert obs["info"]["disturbances"] == {"nudge": 0, "slip": 0}
    robot.disconnect()
    with pytest.raises(ValueError, match=r"unknown start_spread 'middle'; valid: wide, medium, narrow"):
        make_sim_robot("stack", start_spread="middle")
