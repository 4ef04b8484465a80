"""Closed-form kinematics of the tabletop arm for a top-down gripper.

With the tool pointing straight down, the 5-DoF arm decouples:

* ``shoulder_pan = atan2(y, x)`` puts the arm plane through the target;
* the wrist-flex axis sits ``L3`` straight above the grasp centre, so
  shoulder_lift / elbow_flex solve a planar two-link problem to reach it;
* ``wrist_flex`` makes the tool vertical: lift + elbow + wrist = pi;
* ``wrist_roll`` sets the yaw: yaw = pan - roll (the gripper is symmetric under
  a half turn, so roll is taken modulo pi, in [-pi/2, pi/2)).

Angles are measured from the vertical in the arm plane; positive lift, elbow
and wrist angles bend the arm forward.  The numbers mirror
``assets/so101_tabletop.xml``; ``tests/envs/test_arm.py`` checks they agree.
"""

from __future__ import annotations

import math

import numpy as np

JOINT_NAMES = ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll", "gripper")

SHOULDER_HEIGHT = 0.11  # lift axis above the table
SHOULDER_OFFSET = 0.03  # lift axis in front of the pan axis
UPPER_ARM = 0.12
FOREARM = 0.14
WRIST_TO_TCP = 0.10
GRIPPER_OPEN = 0.035  # finger opening (metres) for command 0

JOINT_LOW = np.array([-1.9, -1.75, -0.3, -1.9, -2.9, 0.0])
JOINT_HIGH = np.array([1.9, 1.9, 2.8, 2.3, 2.9, GRIPPER_OPEN])

# Workspace the IK clamps pose targets into (grasp-centre position).
RADIUS_MIN, RADIUS_MAX = 0.08, 0.31
Z_MIN, Z_MAX = 0.005, 0.30
# Keep the planar reach strictly inside the two-link annulus so the elbow
# never hits the singular straight or folded configuration.
_REACH_MAX = (UPPER_ARM + FOREARM) * 0.995
_REACH_MIN = abs(FOREARM - UPPER_ARM) + 0.06


def wrap_angle(a: float) -> float:
    """Wrap an angle to [-pi, pi)."""
    return (a + math.pi) % (2.0 * math.pi) - math.pi


def wrap_half_turn(a: float) -> float:
    """Wrap an angle to [-pi/2, pi/2): equal yaws of a half-turn-symmetric gripper."""
    return (a + 0.5 * math.pi) % math.pi - 0.5 * math.pi


def gripper_target(command: float) -> float:
    """Finger opening (metres) for a gripper command in [0, 1] (0 open, 1 closed)."""
    return GRIPPER_OPEN * (1.0 - min(max(command, 0.0), 1.0))


def top_down_ik(x: float, y: float, z: float, yaw: float) -> np.ndarray:
    """Five arm joint angles putting the grasp centre at (x, y, z) pointing down.

    Unreachable targets are clamped to the workspace (radius, height and the
    two-link reach) instead of failing, so any finite pose command is safe.
    Returns shoulder_pan, shoulder_lift, elbow_flex, wrist_flex, wrist_roll.
    """
    z = min(max(z, Z_MIN), Z_MAX)
    radius = math.hypot(x, y)
    pan = math.atan2(y, x) if radius > 1e-9 else 0.0
    radius = min(max(radius, RADIUS_MIN), RADIUS_MAX)

    # Wrist-flex axis is straight above the grasp centre.
    dx = radius - SHOULDER_OFFSET
    dz = z + WRIST_TO_TCP - SHOULDER_HEIGHT
    # Out of two-link reach: keep the height, move the radius (a top-down
    # gripper should never be pushed lower than commanded).
    dz = min(max(dz, -0.95 * _REACH_MAX), 0.95 * _REACH_MAX)
    reach = math.hypot(dx, dz)
    if reach > _REACH_MAX:
        dx = math.sqrt(_REACH_MAX**2 - dz * dz)
    elif reach < _REACH_MIN:
        dx = math.sqrt(max(_REACH_MIN**2 - dz * dz, 0.0))
    reach = max(math.hypot(dx, dz), 1e-9)

    cos_elbow = (reach * reach - UPPER_ARM**2 - FOREARM**2) / (2.0 * UPPER_ARM * FOREARM)
    elbow = math.acos(min(max(cos_elbow, -1.0), 1.0))  # elbow above the wrist
    lift = math.atan2(dx, dz) - math.atan2(FOREARM * math.sin(elbow), UPPER_ARM + FOREARM * math.cos(elbow))
    wrist = math.pi - lift - elbow
    roll = wrap_half_turn(pan - yaw)
    q = np.array([pan, lift, elbow, wrist, roll])
    return np.clip(q, JOINT_LOW[:5], JOINT_HIGH[:5])


def tcp_yaw(pan: float, roll: float) -> float:
    """Gripper yaw in the world for the top-down tool (inverse of the roll rule)."""
    return wrap_angle(pan - roll)


def planar_fk(joints: np.ndarray) -> np.ndarray:
    """Grasp-centre position for arm joints (pure numpy; used to check the IK)."""
    pan, lift, elbow, wrist = (float(v) for v in joints[:4])
    a1, a2, a3 = lift, lift + elbow, lift + elbow + wrist
    r = SHOULDER_OFFSET + UPPER_ARM * math.sin(a1) + FOREARM * math.sin(a2) + WRIST_TO_TCP * math.sin(a3)
    z = SHOULDER_HEIGHT + UPPER_ARM * math.cos(a1) + FOREARM * math.cos(a2) + WRIST_TO_TCP * math.cos(a3)
    return np.array([r * math.cos(pan), r * math.sin(pan), z])
