"""The closed-form top-down IK agrees with the MuJoCo model of the arm."""

import math

import mujoco
import numpy as np
import pytest

from robot_learn.envs import arm
from robot_learn.envs.scene import build_scene


@pytest.fixture(scope="module")
def model_and_data():
    model, layout = build_scene("stack")
    return model, mujoco.MjData(model), layout


def _pose_of(model, data, layout, joints):
    data.qpos[layout.arm_qpos[:5]] = joints
    mujoco.mj_kinematics(model, data)
    site = layout.tcp_site
    return data.site_xpos[site].copy(), data.site_xmat[site].reshape(3, 3).copy()


@pytest.mark.parametrize("radius", [0.13, 0.19, 0.24])
@pytest.mark.parametrize("angle", [-0.9, 0.0, 0.9])
@pytest.mark.parametrize("z", [0.02, 0.08, 0.14])
def test_ik_reaches_workspace_targets_with_the_tool_pointing_down(model_and_data, radius, angle, z):
    """The task ring (radius 0.135-0.235 m, +-0.9 rad) up to carry height."""
    model, data, layout = model_and_data
    x, y = radius * math.cos(angle), radius * math.sin(angle)
    yaw = angle + 0.4
    q = arm.top_down_ik(x, y, z, yaw)
    pos, rot = _pose_of(model, data, layout, q)
    np.testing.assert_allclose(pos, [x, y, z], atol=1e-6)
    np.testing.assert_allclose(rot[:, 2], [0, 0, -1], atol=1e-6)  # tool axis down
    # The fingers close along the hand's y axis, which points at yaw + 90 deg.
    closing = math.atan2(rot[1, 1], rot[0, 1])
    assert abs(arm.wrap_half_turn(closing - (yaw + math.pi / 2))) < 1e-6
    assert abs(arm.wrap_half_turn(arm.tcp_yaw(q[0], q[4]) - yaw)) < 1e-9


def test_planar_fk_matches_mujoco(model_and_data):
    model, data, layout = model_and_data
    rng = np.random.default_rng(0)
    for _ in range(20):
        q = rng.uniform(arm.JOINT_LOW[:5] * 0.5, arm.JOINT_HIGH[:5] * 0.5)
        q[3] = math.pi - q[1] - q[2]  # keep the tool vertical, as planar_fk assumes
        pos, _ = _pose_of(model, data, layout, q)
        np.testing.assert_allclose(arm.planar_fk(q), pos, atol=1e-6)


@pytest.mark.parametrize("target", [(1.0, 0.0, 0.05), (0.0, 0.0, -0.5), (0.2, 0.9, 2.0), (-0.3, 0.0, 0.1)])
def test_unreachable_targets_are_clamped_to_joint_limits(model_and_data, target):
    model, data, layout = model_and_data
    q = arm.top_down_ik(*target, 0.0)
    assert np.all(np.isfinite(q))
    assert np.all(q >= arm.JOINT_LOW[:5]) and np.all(q <= arm.JOINT_HIGH[:5])
    pos, _ = _pose_of(model, data, layout, q)
    assert pos[2] >= arm.Z_MIN - 1e-6  # never drives the gripper into the table
    assert np.hypot(pos[0], pos[1]) <= arm.RADIUS_MAX + 1e-6


def test_joint_limits_in_code_match_the_model(model_and_data):
    model, _, _ = model_and_data
    ranges = np.array([model.joint(n).range for n in arm.JOINT_NAMES])
    np.testing.assert_allclose(ranges[:, 0], arm.JOINT_LOW)
    np.testing.assert_allclose(ranges[:, 1], arm.JOINT_HIGH)


def test_gripper_command_maps_open_to_closed():
    assert arm.gripper_target(0.0) == pytest.approx(arm.GRIPPER_OPEN)
    assert arm.gripper_target(1.0) == 0.0
    assert arm.gripper_target(2.0) == 0.0 and arm.gripper_target(-1.0) == pytest.approx(arm.GRIPPER_OPEN)
