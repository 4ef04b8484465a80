"""Steering a HITL session's policy (ITPS): request strings, the robot's action layout and
workspace, and a steered session on the MuJoCo twin."""

import json

import numpy as np
import pytest
import torch

from robot_learn.data import EpisodeStore
from robot_learn.envs import SimRobot
from robot_learn.loops import HITLSession, PolicyActor
from robot_learn.loops.steering import build_steering, parse_steer
from robot_learn.policies import DiffusionConfig, make_policy

pytestmark = pytest.mark.usefixtures("one_torch_thread")
TARGET = (0.2, -0.05, 0.08)
POSE_RANGE = (np.array([-0.1, -0.35, 0.0, -np.pi, 0.0], np.float32), np.array([0.4, 0.35, 0.35, np.pi, 1.0], np.float32))


def twin_policy(action_dim=5):
    """A random-weight state policy reading the twin's ``state`` and ``env_state``."""
    torch.manual_seed(0)
    low, high = (np.resize(v, action_dim).astype(np.float32) for v in POSE_RANGE)
    stats = {"action": {"min": low, "max": high},
             **{k: {"min": -np.ones(d, np.float32), "max": np.ones(d, np.float32)}
                for k, d in (("state", 10), ("env_state", 14))}}
    config = DiffusionConfig(action_dim=action_dim, state_dims={"state": 10, "env_state": 14}, action_horizon=8,
                             execute_horizon=4, state_hidden_dims=[16], state_feature_dim=16, down_dims=[16, 32],
                             timestep_embed_dim=16, num_inference_steps=5)
    return make_policy("diffusion", config, stats)


@pytest.fixture(scope="module")
def robot():
    return SimRobot("stack", cameras=(), max_steps=12)


@pytest.mark.parametrize(("text", "kind", "rows"), [
    ("point:0.2,-0.05,0.08", "point", ((0.2, -0.05, 0.08),)),
    (" sketch:0.1,0,0.1/0.2,0.1,0.1 ", "sketch", ((0.1, 0.0, 0.1), (0.2, 0.1, 0.1))),
    ("correction:0.2,0,0.1,0,1", "correction", ((0.2, 0.0, 0.1, 0.0, 1.0),)),
])
def test_steer_strings_parse_to_kind_and_numbers(text, kind, rows):
    request = parse_steer(text)
    assert (request.kind, request.rows) == (kind, rows)


@pytest.mark.parametrize(("text", "message"), [
    ("0.2,0.1,0.05", r"malformed steer '0.2,0.1,0.05': expected point:x,y,z, sketch:x,y,z/x,y,z/... or "
                     r"correction:<action>/<action>/... \(steering kinds: point, sketch, correction\)"),
    ("goto:0.2,0.1,0.05", r"malformed steer 'goto:0.2,0.1,0.05': expected point:x,y,z"),
    ("point:0.2,0.1", r"malformed steer 'point:0.2,0.1': each point is 3 numbers x,y,z; got 2"),
    ("point:a,b,c", r"malformed steer 'point:a,b,c': values must be numbers separated by commas"),
    ("point:", r"malformed steer 'point:': values must be numbers"),
    ("point:nan,0,0.1", r"malformed steer 'point:nan,0,0.1': values must be finite numbers"),
    ("point:0.2,0,0.1/0.2,0,0.2", r"a point is one x,y,z \(a path of several is sketch:...\)"),
    ("sketch:0.2,0,0.1", r"a sketch needs at least 2 points x,y,z/x,y,z"),
    ("correction:0.2,0,0.1,0,1/0.2,0", r"every corrected action has the same number of values"),
])
def test_malformed_steer_strings_are_refused_in_one_line(text, message):
    with pytest.raises(ValueError, match=message) as err:
        parse_steer(text)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("point", [(0.5, 0.0, 0.1), (0.2, 0.0, 0.32), (0.3, 0.3, 0.1), (0.02, 0.0, 0.1)])
def test_a_point_outside_the_workspace_names_the_point_and_the_bounds(robot, point):
    text = "point:" + ",".join(map(str, point))
    with pytest.raises(ValueError) as err:
        build_steering(text, robot, twin_policy())
    shown = ", ".join(f"{v:g}" for v in point)
    assert str(err.value) == (f"steering point ({shown}) is outside robot SimRobot's workspace: x in [-0.1, 0.4], "
                              "y in [-0.35, 0.35], z in [0.005, 0.3] m, and 0.08 <= hypot(x, y) <= 0.31 m from the "
                              "arm's base")


def test_every_point_of_a_sketch_or_correction_must_be_reachable(robot):
    with pytest.raises(ValueError, match=r"steering point \(0.35, 0.3, 0.1\) is outside"):
        build_steering("sketch:0.2,0,0.1/0.35,0.3,0.1", robot, twin_policy())
    with pytest.raises(ValueError, match=r"steering point \(0.2, 0, 0.4\) is outside"):
        build_steering("correction:0.2,0,0.1,0,1/0.2,0,0.4,0,1", robot, twin_policy())


def test_a_policy_of_another_action_width_names_both_widths(robot):
    with pytest.raises(ValueError, match="objective reads 5-dim actions but the policy acts in 6 dims"):
        build_steering("point:0.2,0,0.1", robot, twin_policy(action_dim=6))


def test_a_correction_must_be_whole_actions_of_the_robot(robot):
    with pytest.raises(ValueError, match=r"a corrected action has 5 values \(x, y, z, yaw, gripper\), got 3"):
        build_steering("correction:0.2,0,0.1", robot, twin_policy())


def test_a_robot_whose_actions_are_joints_cannot_be_steered_to_a_point():
    joints = SimRobot("stack", cameras=(), action_mode="joint")
    with pytest.raises(ValueError, match="steering needs pose actions with x, y, z; robot SimRobot's actions are "
                                         "shoulder_pan, shoulder_lift"):
        build_steering("point:0.2,0,0.1", joints, twin_policy(action_dim=6))


def test_an_unknown_sampler_lists_the_valid_ones(robot):
    with pytest.raises(ValueError, match="unknown steer_sampler 'best'; valid choices: random, post_hoc, biased_init"):
        build_steering("point:0.2,0,0.1", robot, twin_policy(), sampler="best")


def executed_distance(store, index):
    actions = store.episode(index)["steps"]["action"]
    return float(np.linalg.norm(actions[:, :3] - np.array(TARGET), axis=1).mean())


def test_a_steered_session_sends_actions_closer_to_the_point_and_logs_the_request(robot, tmp_path):
    robot.connect()
    store = EpisodeStore.create(tmp_path / "s.zarr")
    actor = PolicyActor(twin_policy(), seed=0)
    session = HITLSession(robot, actor, None, store, "stack", max_steps=8, log_path=tmp_path / "log.jsonl")
    plain = session.run_episode(seed=1)
    session.steer("point:" + ",".join(map(str, TARGET)), sampler="stochastic")
    steered = session.run_episode(seed=1)
    session.steer(None)
    assert session.steering == ""
    robot.disconnect()
    assert (plain.steering, steered.steering) == ("", "point:0.2,-0.05,0.08 (stochastic)")
    assert executed_distance(store, steered.index) < 0.6 * executed_distance(store, plain.index)
    log = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert [entry["steering"] for entry in log] == ["", "point:0.2,-0.05,0.08 (stochastic)"]


def test_a_refused_request_leaves_the_steering_as_it_was(robot, tmp_path):
    actor = PolicyActor(twin_policy(), seed=0)
    session = HITLSession(robot, actor, None, EpisodeStore.create(tmp_path / "s.zarr"), "stack", max_steps=4)
    session.steer("point:0.2,0,0.1", sampler="guided")
    with pytest.raises(ValueError, match="outside"):
        session.steer("point:0.9,0,0.1")
    assert session.steering == "point:0.2,0,0.1 (guided)"
