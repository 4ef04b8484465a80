"""Scripted experts for gym-aloha's transfer-cube and insertion (gym-aloha ships none).

The plan is made in end-effector space and replayed in joint space:

1. ``reset(env)`` copies the adapter's MuJoCo state (every field of its MjData, so
   the copy steps bit for bit as the env will) into a private MjData, which is
   stepped with plain MuJoCo: nothing is rendered while planning.
2. A waypoint script moves both fingertips (positions and gripper orientations,
   linearly interpolated) and the grippers, re-reading the object poses where a
   grasp decides what comes next. Each 50 Hz step solves the arms' inverse
   kinematics (damped least squares, with a posture term that keeps the wrist rolls
   on one branch) and steps the copy with those joint targets, as gym-aloha's joint
   task would; the targets and grippers are the 14-dim action.
3. The plan stops at the step the copy succeeds (gym-aloha's reward 4). If it never
   does, the next variant of the plan (grasp depths, offsets) is tried; the last is
   kept when none succeeds. ``act`` replays the actions, then holds the last one.

gym-aloha's own end-effector tasks (mocap bodies welded to the grippers) are not
used: their weld is soft (solimp 0.25) against joint friction of 30-60, and a
90-degree wrist turn was still 40% short after 3 s.

Transfer-cube: the right arm picks the cube from above, turns it horizontal in the
middle, the left arm takes it from the other side. Insertion: the left arm grasps
the socket, the right arm the peg; both lift, meet at the middle with their axes
aligned (corrected from the objects' poses in the planning model) and push the peg
in until it touches the pin.
"""

from __future__ import annotations

import copy
import math

import numpy as np

from .registry import require

DT_STEPS = 10  # physics steps per 50 Hz control step (timestep 0.002)
TIP = 0.15  # fingertip centre along the gripper link's x axis (the fingers end at 0.154)
IK_DAMPING = 1e-4
# Posture term of the IK: pulls forearm roll and wrist rotate (arm joints 3 and 5) towards 0.
# Where the wrist angle passes 0 their axes line up, and without it the solve spun both by
# about pi in opposite directions (the same grasp, another joint branch), which way decided by
# the scene: 24 of 37 transfer-cube demos spun (16 one way, 8 the other), as did 4 of 5
# insertion plans checked, so the demos disagreed about the joint targets of like scenes.
ROLL_POSTURE = 1e-3
ROLL_JOINTS = np.diag([0.0, 0.0, 0.0, 1.0, 0.0, 1.0])
ORIENT_WEIGHT = 0.3  # metres per radian of orientation error in the IK
JOINT_NOISE = 0.02  # rad of joint-target noise per unit of ``noise``
# Plan variants, tried in order until one succeeds in the physics copy (whose replay in the
# env is exact). Transfer-cube: (right fingertips below the cube's centre at the grasp, left
# fingertips short of its centre at the handover); insertion: grasp peg and socket this far
# from their centres, away from each other.
CUBE_VARIANTS = ((0.0, 0.008), (0.006, 0.008), (0.012, 0.004), (0.0, 0.003), (0.006, 0.012))
INSERTION_VARIANTS = (0.03, 0.02, 0.035, 0.025)
PEG_HALF_LENGTH, SOCKET_HALF_LENGTH, PIN_HALF_LENGTH = 0.06, 0.06, 0.04  # along x (the model's geoms)
ARMS = ("left", "right")


def _mujoco():
    return require("mujoco", "mujoco", "aloha")


def _quat(axis: tuple[float, float, float], angle: float) -> np.ndarray:
    q = np.zeros(4)
    _mujoco().mju_axisAngle2Quat(q, np.asarray(axis, float), angle)
    return q


def _mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Quaternion product a * b (MuJoCo's, w first)."""
    q = np.zeros(4)
    _mujoco().mju_mulQuat(q, np.asarray(a, float), np.asarray(b, float))
    return q


def _conj(q: np.ndarray) -> np.ndarray:
    return q * np.array([1.0, -1.0, -1.0, -1.0])


def gripper_quat(arm: str, pitch: float, yaw: float = 0.0) -> np.ndarray:
    """The gripper link's world orientation: pointing at the other arm (``pitch`` 0), down
    (``pitch`` pi/2); ``yaw`` turns it about the vertical, as seen from the arm's base."""
    base = 0.0 if arm == "left" else math.pi  # the right arm's base faces -x
    return _mul(_quat((0, 0, 1), base + yaw), _quat((0, 1, 0), pitch))


class PlanSucceeded(Exception):
    """Raised by ``JointPlanner`` at the step the task succeeds in its copy: the plan can stop."""


class JointPlanner:
    """A private copy of the adapter's gym-aloha physics, driven in fingertip space.

    ``move`` interpolates both arms' fingertip targets (position and gripper
    orientation) and grippers over some steps; each step solves the arms' inverse
    kinematics (damped least squares from the last solution), steps the copy as the
    env would step for that action, and records the action. ``object_pose(body)``
    reads an object's pose in the copy.
    """

    def __init__(self, physics, task: str):
        self.mujoco = require("mujoco", "mujoco", f"aloha/{task}")
        self.constants = require("gym_aloha.constants", "gym-aloha", f"aloha/{task}")
        self.model = physics.model.ptr
        # every field, warm starts included: a contact-rich replay drifts from 1e-22 differences
        self.data = copy.copy(physics.data.ptr)
        self.scratch = self.mujoco.MjData(self.model)  # kinematics only, for the IK
        required, forbidden = SUCCESS[task]
        geom = lambda n: self.model.geom(n).id  # noqa: E731
        self.required = [{geom(a), geom(b)} for a, b in required]
        self.forbidden = [{geom(a), geom(b)} for a, b in forbidden]
        self.gripper_body = {a: self.model.body(f"vx300s_{a}/gripper_link").id for a in ARMS}
        self.joints = {"left": np.arange(0, 6), "right": np.arange(8, 14)}  # qpos = dof indices here
        self.limits = {a: self.model.jnt_range[[self.model.dof_jntid[i] for i in j]] for a, j in self.joints.items()}
        self.solution = {a: self.data.qpos[j].copy() for a, j in self.joints.items()}
        c = self.constants
        start_grip = (c.START_ARM_POSE[6] - c.PUPPET_GRIPPER_POSITION_CLOSE) / (
            c.PUPPET_GRIPPER_POSITION_OPEN - c.PUPPET_GRIPPER_POSITION_CLOSE)
        self.target = {a: (*self.tip_pose(a), start_grip) for a in ARMS}
        self.actions: list[np.ndarray] = []

    def tip_pose(self, arm: str, data=None) -> tuple[np.ndarray, np.ndarray]:
        """(fingertip centre, gripper quaternion) of ``arm``."""
        data = self.data if data is None else data
        b = self.gripper_body[arm]
        return data.xpos[b] + data.xmat[b].reshape(3, 3)[:, 0] * TIP, data.xquat[b].copy()

    def object_pose(self, body: str) -> tuple[np.ndarray, np.ndarray]:
        b = self.model.body(body).id
        return self.data.xpos[b].copy(), self.data.xquat[b].copy()

    def _ik(self, arm: str, tip: np.ndarray, quat: np.ndarray, iters: int = 8) -> np.ndarray:
        m, d, mj = self.model, self.scratch, self.mujoco
        cols = self.joints[arm]
        q = self.solution[arm].copy()
        jacp, jacr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
        for _ in range(iters):
            d.qpos[cols] = q
            mj.mj_kinematics(m, d)
            mj.mj_comPos(m, d)
            pos, cur = self.tip_pose(arm, d)
            err_q = _mul(quat, _conj(cur))
            err = np.concatenate([tip - pos, 2.0 * np.sign(err_q[0] or 1.0) * err_q[1:]])
            if np.abs(err).max() < 1e-4:
                break
            mj.mj_jac(m, d, jacp, jacr, pos, self.gripper_body[arm])
            jac = np.vstack([jacp[:, cols], ORIENT_WEIGHT * jacr[:, cols]])
            err[3:] *= ORIENT_WEIGHT
            # argmin |jac dq - err|^2 + IK_DAMPING |dq|^2 + ROLL_POSTURE |rolls of (q + dq)|^2
            hessian = jac.T @ jac + IK_DAMPING * np.eye(6) + ROLL_POSTURE * ROLL_JOINTS
            q = q + np.linalg.solve(hessian, jac.T @ err - ROLL_POSTURE * ROLL_JOINTS @ q)
            q = np.clip(q, self.limits[arm][:, 0], self.limits[arm][:, 1])
        self.solution[arm] = q
        return q

    def move(self, steps: int, **targets: tuple[np.ndarray | None, np.ndarray | None, float | None]) -> None:
        """Go to ``left=(tip, quat, gripper)`` / ``right=...`` (None keeps that part) in ``steps``."""
        start = dict(self.target)
        goal = {}
        for arm in ARMS:
            new = targets.get(arm, (None, None, None))
            goal[arm] = tuple(o if n is None else np.asarray(n, float) for o, n in zip(start[arm], new))
        for k in range(1, steps + 1):
            f = k / steps
            action = []
            for arm in ARMS:
                (p0, q0, g0), (p1, q1, g1) = start[arm], goal[arm]
                q1 = q1 if np.dot(q0, q1) >= 0 else -q1
                quat = (1 - f) * q0 + f * q1
                action += [*self._ik(arm, (1 - f) * p0 + f * p1, quat / np.linalg.norm(quat)),
                           float((1 - f) * g0 + f * g1)]
            self._step(np.array(action, np.float32))
        self.target = goal

    def hold(self, steps: int) -> None:
        self.move(steps)

    def _step(self, action: np.ndarray) -> None:
        """What gym-aloha's joint task does with ``action``: grippers mirrored onto both fingers."""
        grip = [self.constants.unnormalize_puppet_gripper_position(g) for g in (action[6], action[13])]
        self.data.ctrl[:] = [*action[:6], grip[0], -grip[0], *action[7:13], grip[1], -grip[1]]
        for _ in range(DT_STEPS):  # as dm_control's (legacy) Physics.step: step2, then step1
            self.mujoco.mj_step2(self.model, self.data)
            self.mujoco.mj_step1(self.model, self.data)
        self.actions.append(action)
        pairs = [{c.geom1, c.geom2} for c in self.data.contact[:self.data.ncon]]
        if all(r in pairs for r in self.required) and not any(f in pairs for f in self.forbidden):
            raise PlanSucceeded


def plan_transfer_cube(p: JointPlanner, variant: tuple[float, float]) -> None:
    """Right arm: pick the cube from above, carry it to the middle, turn it horizontal;
    left arm: close on the cube's free half from the other side."""
    down_r, flat_r = gripper_quat("right", math.pi / 2), gripper_quat("right", 0.0)
    flat_l = gripper_quat("left", 0.0)
    cube, _ = p.object_pose("box")
    cube[2] = 0.02  # resting on the table
    meet = np.array([0.0, 0.5, 0.22])
    p.move(45, right=(cube + [0, 0, 0.10], down_r, 1.0), left=(meet - [0.18, 0, 0], flat_l, 1.0))
    grasp_depth, handover_depth = variant
    p.move(25, right=(cube - [0, 0, grasp_depth], None, None))
    p.move(12, right=(None, None, 0.0))
    p.move(20, right=(cube + [0, 0, 0.08], None, None))  # lift straight up before turning
    p.move(45, right=(meet, flat_r, None))
    p.hold(10)
    cube, _ = p.object_pose("box")  # held about 2 cm beyond the right fingertips
    p.move(25, left=(cube - [handover_depth, 0, 0], None, None))
    p.move(12, left=(None, None, 0.0))
    p.move(10, right=(None, None, 1.0))
    p.move(20, right=(meet + [0.12, 0, 0.05], None, None))


def plan_insertion(p: JointPlanner, grasp_offset: float) -> None:
    """Left arm: grasp the socket's far half from above; right arm: the peg's far half.
    Both lift and meet with the peg 2 cm short of the socket's mouth, correct twice from
    the objects' poses, then push the peg in until it touches the pin."""
    down_l, down_r = gripper_quat("left", math.pi / 2), gripper_quat("right", math.pi / 2)
    peg, _ = p.object_pose("peg")
    socket, _ = p.object_pose("socket")
    peg_grasp = np.array([peg[0] + grasp_offset, peg[1], 0.01])  # peg and socket resting on the table
    socket_grasp = np.array([socket[0] - grasp_offset, socket[1], 0.017])
    p.move(45, left=(socket_grasp + [0, 0, 0.10], down_l, 1.0), right=(peg_grasp + [0, 0, 0.10], down_r, 1.0))
    p.move(25, left=(socket_grasp, None, None), right=(peg_grasp, None, None))
    p.move(12, left=(None, None, 0.0), right=(None, None, 0.0))
    p.move(30, left=(socket_grasp + [0, 0, 0.12], None, None), right=(peg_grasp + [0, 0, 0.12], None, None))
    socket_goal = np.array([-0.05, 0.5, 0.2])
    mouth = SOCKET_HALF_LENGTH + PEG_HALF_LENGTH + 0.02  # peg centre 2 cm short of the socket's mouth
    grasp_l, grasp_r = p.target["left"][0], p.target["right"][0]
    p.move(45, left=(socket_goal + grasp_l - p.object_pose("socket")[0], None, None),
           right=(socket_goal + [mouth, 0, 0] + grasp_r - p.object_pose("peg")[0], None, None))
    for steps in (20, 15):  # the objects sit in the grippers where the grasps left them: correct
        p.hold(10)
        socket, peg = p.object_pose("socket")[0], p.object_pose("peg")[0]
        p.move(steps, left=(p.target["left"][0] + socket_goal - socket, None, None),
               right=(p.target["right"][0] + socket_goal + [mouth, 0, 0] - peg, None, None))
    touch = PIN_HALF_LENGTH + PEG_HALF_LENGTH - 0.01  # 1 cm past touching the pin
    p.move(35, right=(p.target["right"][0] - [mouth - touch, 0, 0], None, None))
    p.hold(20)


PLANS = {"transfer_cube": (plan_transfer_cube, CUBE_VARIANTS), "insertion": (plan_insertion, INSERTION_VARIANTS)}
# gym-aloha's success (reward 4): contact pairs that must be there, and ones that must not.
SUCCESS = {"transfer_cube": ((("red_box", "vx300s_left/10_left_gripper_finger"),), (("red_box", "table"),)),
           "insertion": ((("red_peg", "pin"),), ())}


class AlohaExpert:
    """Scripted expert of gym-aloha's ``insertion`` or ``transfer_cube``: ``reset(env)``
    plans the episode from the env's object poses, ``act(obs, env)`` replays it.

    ``noise`` adds Gaussian noise (``noise * 0.02`` rad std) to the arm joint targets.
    ``phase``: the index of the current action in the plan.
    """

    def __init__(self, task: str, noise: float = 0.0, seed: int | None = None):
        if noise < 0 or not math.isfinite(noise):
            raise ValueError(f"noise must be a finite number >= 0, got {noise}")
        self.task = task
        self.noise = float(noise)
        self.rng = np.random.default_rng(seed)
        self.actions = np.zeros((0, 14), np.float32)
        self.variant = None  # the plan variant ``reset`` kept
        self.phase = 0

    def reset(self, env) -> None:
        """Plan the episode in a copy of ``env``'s physics from the objects' poses now."""
        plan, variants = PLANS[self.task]
        for variant in variants:
            planner = JointPlanner(env.unwrapped._physics, self.task)
            try:
                plan(planner, variant)
            except PlanSucceeded:
                break
        self.actions = np.stack(planner.actions)
        self.variant = variant
        self.phase = 0

    def act(self, obs, env) -> np.ndarray:
        action = self.actions[min(self.phase, len(self.actions) - 1)].copy()
        self.phase += 1
        if self.noise:
            arm = np.r_[0:6, 7:13]
            action[arm] += self.rng.normal(0.0, self.noise * JOINT_NOISE, arm.size).astype(np.float32)
        return action
