"""Scripted pick-and-place experts with phases and a noise knob.

One expert class serves every task: it grasps the ``move`` object (in a task with
several movable objects, one drawn at random per episode) and puts it
where the task's ``move_goal`` says (on the other cube, into the hole or bin
for forward tasks; at the sampled drop spot on the table for reverse tasks).

The commanded pose moves toward the phase's waypoint at a capped speed, so
actions are smooth absolute poses.  Grasp and release are symmetric under time
reversal: the gripper only changes while the arm is still, with still steps on
both sides (settle, then close/open), so a reversed reverse-task episode
closes the gripper before lifting and opens it before leaving.  Once done
(after the retreat) the expert returns to the pose it started from and holds
there (``at_rest``): an episode recorded that far, reversed, starts where the
forward task's episodes start.

``noise`` in [0, 1] (larger is allowed) makes mixed-quality demos: Gaussian
action noise, random hesitations (the previous action repeats) and overshoots
(the hover waypoints are first offset, then corrected).  At 0 the expert is
deterministic.
"""

from __future__ import annotations

import math

import numpy as np

from .task_base import (
    APPROACH, CARRY, DESCEND, DONE, GRASP, LIFT, LOWER, PHASES, RELEASE, RETREAT,
    nearest_symmetric_yaw, yaw_of_quat,
)

FAST = 0.03  # m per 0.1 s step in free space
SLOW = 0.015  # m per step near contact
YAW_RATE = 0.2  # rad per step
HOVER = 0.05  # approach height above the grasp point
SETTLE_STEPS = 2  # still steps before the gripper changes
GRIPPER_STEPS = 4  # still steps while it closes or opens
REACH_TOL = 0.006  # m, measured grasp centre to waypoint
WAIT_LIMIT = 6  # steps to wait at a waypoint the arm cannot quite reach


class PickPlaceExpert:
    """Scripted expert for one task (see ``make_expert``).

    Call ``reset(env)`` after ``env.reset()``, then ``act(obs, env)`` each step.
    ``phase`` is the current phase id (index into ``PHASES``).
    """

    phases = PHASES

    def __init__(self, task: str, noise: float = 0.0, seed: int | None = None):
        if noise < 0 or not math.isfinite(noise):
            raise ValueError(f"noise must be a finite number >= 0, got {noise}")
        self.task_name = task
        self.noise = float(noise)
        self.rng = np.random.default_rng(seed)
        self.phase = APPROACH

    # ----- public API ------------------------------------------------------------
    def reset(self, env) -> None:
        """Start a new episode from the env's current state."""
        self.env = env.unwrapped
        tcp, yaw = self.env.tcp_pose()
        self.cmd = np.array([*tcp, yaw], dtype=np.float64)
        self.start = self.cmd.copy()
        self.at_rest = False  # done and back at the start pose
        self.grip = 0.0
        self.phase = APPROACH
        self.counter = 0
        self.wait = 0
        self.offset = np.zeros(3)  # object centre minus grasp centre while held
        self.grip_to_obj = 0.0  # object yaw minus gripper yaw while held
        self.overshoot = self._sample_overshoot()
        self.last_action: np.ndarray | None = None
        self.hold_steps = 0
        # A task with several movable objects (two identical cubes): pick one at random, so
        # the demos hold every mode. One-object tasks draw nothing, keeping their noise stream.
        roles = self.env.task.movable_roles
        self.role = str(roles[int(self.rng.integers(len(roles)))]) if len(roles) > 1 else roles[0]

    def act(self, obs=None, env=None) -> np.ndarray:
        """Next pose action [x, y, z, yaw, gripper] (float32)."""
        if env is not None and env.unwrapped is not self.env:
            raise ValueError("expert.act got a different env than expert.reset")
        if self.noise > 0 and self.last_action is not None:
            if self.hold_steps > 0:
                self.hold_steps -= 1
                return self.last_action.copy()
            if self.rng.random() < 0.08 * self.noise:
                self.hold_steps = int(self.rng.integers(0, 3))
                return self.last_action.copy()
        waypoint, speed = self._plan()
        self._advance(waypoint, speed)
        action = np.append(self.cmd, self.grip).astype(np.float32)
        if self.noise > 0:
            action[:3] += self.rng.normal(0.0, 0.004 * self.noise, 3).astype(np.float32)
            action[3] += np.float32(self.rng.normal(0.0, 0.05 * self.noise))
        self.last_action = action
        return action.copy()

    # ----- planning --------------------------------------------------------------
    def _sample_overshoot(self) -> np.ndarray:
        if self.noise <= 0:
            return np.zeros(3)
        return np.append(self.rng.uniform(-0.03, 0.03, 2) * min(self.noise, 1.0), 0.0)

    def _grasp_point(self) -> tuple[np.ndarray, float]:
        pos, quat = self.env.object_pose(self.role)
        grasp = pos + [0.0, 0.0, self.env.task.move_kind.grasp_dz]
        # Cube and square peg repeat every quarter turn: pick the grasp yaw that
        # keeps wrist_roll near zero (yaw near the pan angle), far from the
        # roll wrap-around at +-90 degrees.
        pan = math.atan2(grasp[1], grasp[0])
        return grasp, nearest_symmetric_yaw(yaw_of_quat(quat), pan)

    def _place_point(self) -> tuple[np.ndarray, float]:
        task = self.env.task
        tcp_goal = task.move_goal(self.env) - self.offset
        pan = math.atan2(tcp_goal[1], tcp_goal[0])
        return tcp_goal, nearest_symmetric_yaw(task.goal_yaw(self.env) - self.grip_to_obj, pan)

    def _goto(self, phase: int) -> None:
        self.phase, self.counter, self.wait = phase, 0, 0
        if phase in (APPROACH, CARRY):
            self.overshoot = self._sample_overshoot()

    def _plan(self) -> tuple[np.ndarray, float]:
        """Update the phase from the state and return (waypoint [x,y,z,yaw], speed)."""
        env, task = self.env, self.env.task
        tcp, yaw = env.tcp_pose()
        held = env.is_held()
        # A dropped object sends the expert back to pick it up again.
        if self.phase in (LIFT, CARRY, LOWER) and not held:
            self._goto(APPROACH)
            self.grip = 0.0

        if self.phase == APPROACH:
            grasp, yaw = self._grasp_point()
            wp = np.array([*(grasp[:2] + self.overshoot[:2]), grasp[2] + HOVER, yaw])
            if self._reached(wp, tcp):
                if np.any(self.overshoot):
                    self.overshoot[:] = 0.0
                else:
                    self._goto(DESCEND)
            return wp, FAST
        if self.phase == DESCEND:
            grasp, yaw = self._grasp_point()
            wp = np.array([*grasp, yaw])
            if self._reached(wp, tcp):
                self._goto(GRASP)
            return wp, SLOW
        if self.phase == GRASP:
            self.counter += 1
            self.grip = 0.0 if self.counter <= SETTLE_STEPS else 1.0
            if self.counter >= SETTLE_STEPS + GRIPPER_STEPS:
                if held:
                    self._goto(LIFT)
                else:  # missed: open and try again
                    self.grip = 0.0
                    self._goto(APPROACH)
            return self.cmd.copy(), 0.0
        if self.phase == LIFT:
            wp = np.array([self.cmd[0], self.cmd[1], task.carry_z, self.cmd[3]])
            if self._reached(wp, tcp):
                pos, quat = env.object_pose(self.role)
                # Grasp offset and object yaw in the hand, measured in the air
                # once, so the place target does not chase its own motion.
                self.offset = pos - tcp
                self.grip_to_obj = yaw_of_quat(quat) - yaw
                self._goto(CARRY)
            return wp, SLOW
        if self.phase == CARRY:
            goal, yaw = self._place_point()
            wp = np.array([*(goal[:2] + self.overshoot[:2]), task.carry_z, yaw])
            if self._reached(wp, tcp):
                if np.any(self.overshoot):
                    self.overshoot[:] = 0.0
                else:
                    self._goto(LOWER)
            return wp, FAST
        if self.phase == LOWER:
            goal, _ = self._place_point()
            wp = np.array([*goal, self.cmd[3]])
            if self._reached(wp, tcp):
                self._goto(RELEASE)
            return wp, SLOW
        if self.phase == RELEASE:
            self.counter += 1
            self.grip = 1.0 if self.counter <= SETTLE_STEPS else 0.0
            if self.counter >= SETTLE_STEPS + GRIPPER_STEPS:
                self._goto(RETREAT)
            return self.cmd.copy(), 0.0
        if self.phase == RETREAT:
            wp = np.array([self.cmd[0], self.cmd[1], task.carry_z, self.cmd[3]])
            if self._reached(wp, tcp):
                self._goto(DONE)
            return wp, SLOW
        # DONE: back to the start pose, then hold still there.
        if not self.at_rest and self._reached(self.start, tcp):
            self.at_rest = True
        return self.start.copy(), FAST

    def _reached(self, waypoint: np.ndarray, tcp: np.ndarray) -> bool:
        """The command sits on the waypoint and the arm has (nearly) caught up."""
        if np.abs(self.cmd - waypoint).max() > 1e-3:
            return False
        self.wait += 1
        return bool(np.linalg.norm(tcp - waypoint[:3]) < REACH_TOL or self.wait > WAIT_LIMIT)

    def _advance(self, waypoint: np.ndarray, speed: float) -> None:
        """Move the command toward the waypoint, capped at ``speed`` and YAW_RATE."""
        delta = waypoint[:3] - self.cmd[:3]
        dist = float(np.linalg.norm(delta))
        if dist <= speed or dist == 0.0:
            self.cmd[:3] = waypoint[:3]
        else:
            self.cmd[:3] += delta * (speed / dist)
        dyaw = waypoint[3] - self.cmd[3]
        self.cmd[3] += float(np.clip(dyaw, -YAW_RATE, YAW_RATE))
