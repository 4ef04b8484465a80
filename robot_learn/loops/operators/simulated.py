"""A simulated operator: the scripted expert plus a takeover rule.

The benchmarks and tests use it in place of a person. It watches the policy
drive; the :class:`TakeoverRule` fires when task progress stalls for
``stall_steps``, falls by more than ``regress_tol``, or the end-effector strays
more than ``plan_tol`` from where the expert would command it. After
``reaction_steps`` (a person's reaction time) it takes over and acts with the
expert until progress has risen ``recover_gain`` above where it took over and
the expert's plan is again close (back on track), then hands back. A per-round
budget of human seconds caps how much it may intervene.

With ``demonstrate=True`` it records whole demonstrations instead (the
"more demos for the same human-seconds" arm of an efficacy test): it takes control
at an episode's first step and keeps it to the end, until the budget is spent.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np

from robot_learn.loops.control import Mode, Request
from robot_learn.loops.operators.base import pose_of


@dataclass
class TakeoverRule:
    """When a supervising human would step in (all counts in control steps)."""

    stall_steps: int = 20        # progress has not improved for this many steps
    stall_eps: float = 0.01      # improvement smaller than this counts as a stall
    regress_tol: float = 0.15    # progress fell this far below its best
    plan_tol: float = 0.08       # m between the commanded pose and the expert's
    min_steps: int = 5           # no takeover in the first steps of an episode

    def __post_init__(self) -> None:
        if self.stall_steps < 1:
            raise ValueError(f"stall_steps must be >= 1, got {self.stall_steps}")
        for name in ("stall_eps", "regress_tol", "plan_tol"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")

    def reason(self, progress_history: list[float], proposed: np.ndarray | None,
               expert_action: np.ndarray | None) -> str | None:
        """Why to take over now ('stall', 'regress', 'off_plan'), or None."""
        t = len(progress_history)
        if t < self.min_steps:
            return None
        best = max(progress_history)
        if best - progress_history[-1] > self.regress_tol:
            return "regress"
        if t > self.stall_steps:
            before = max(progress_history[:-self.stall_steps])
            if best - before < self.stall_eps and progress_history[-1] < 1.0:
                return "stall"
        # Near the end the expert would restart its plan (re-grasp), so no plan check there.
        if proposed is not None and expert_action is not None and progress_history[-1] < 0.9:
            if float(np.linalg.norm(proposed[:3] - expert_action[:3])) > self.plan_tol:
                return "off_plan"
        return None


class SimulatedOperator:
    """Scripted expert + :class:`TakeoverRule` acting through a :class:`~robot_learn.envs.SimRobot`.

    ``budget_s``: human seconds allowed per round (``None``: unlimited); it is
    spent at ``1 / rate_hz`` seconds per step in control and refilled by
    :meth:`new_round`. ``demonstrate``: take control at every episode's first step and
    keep it (whole demonstrations; the rule is not used).
    """

    def __init__(self, task: str, rule: TakeoverRule | None = None, reaction_steps: int = 3,
                 recover_gain: float = 0.15, budget_s: float | None = None, rate_hz: float = 10.0,
                 expert_noise: float = 0.0, seed: int = 0, operator_id: str = "simulated",
                 demonstrate: bool = False) -> None:
        if reaction_steps < 0:
            raise ValueError(f"reaction_steps must be >= 0, got {reaction_steps}")
        self.task = task
        self.rule = rule or TakeoverRule()
        self.reaction_steps = int(reaction_steps)
        self.recover_gain = float(recover_gain)
        self.budget_s = budget_s
        self.rate_hz = float(rate_hz)
        self.expert_noise = float(expert_noise)
        self.seed = int(seed)
        self.id = operator_id
        self.demonstrate = bool(demonstrate)
        self.spent_s = 0.0
        self.takeovers = 0
        self.reasons: list[str] = []
        self._episode = 0

    # ----- round and episode bookkeeping -----------------------------------------
    def new_round(self) -> None:
        """Refill the human-seconds budget."""
        self.spent_s = 0.0

    @property
    def budget_left_s(self) -> float:
        # (a float tolerance: sixty 0.1 s steps spend a 6 s budget)
        return float("inf") if self.budget_s is None else max(0.0, self.budget_s - self.spent_s - 1e-9)

    def start_episode(self, robot: Any) -> None:
        from robot_learn.envs import make_expert

        self.robot = robot
        self.expert = make_expert(self.task, noise=self.expert_noise, seed=self.seed + self._episode)
        self._episode += 1
        self.expert.reset(robot.env)
        self.progress: list[float] = []
        self.trigger_at: int | None = None  # step at which a decided takeover starts
        self.onset_progress = 0.0
        self.in_control = False

    def end_episode(self) -> None:
        self.in_control = False

    # ----- the per-step protocol ---------------------------------------------------
    def poll(self, obs: dict[str, Any], proposed: np.ndarray | None, mode: Mode) -> list[Request]:
        info = obs.get("info", {})
        progress = float(info.get("progress", 0.0))
        self.progress.append(progress)
        t = len(self.progress)
        if self.demonstrate:
            return self._poll_demonstrating(mode)
        if mode is Mode.HUMAN:
            if self.budget_left_s <= 0:
                return [Request.RELEASE]
            back_on_track = progress >= min(self.onset_progress + self.recover_gain, 1.0)
            if back_on_track or info.get("success", False):
                return [Request.RELEASE]
            return []
        self.in_control = False  # control is (back) with the policy
        if mode is not Mode.AUTONOMOUS or self.budget_left_s <= 0:
            return []
        if self.trigger_at is not None:
            if t >= self.trigger_at:
                self.trigger_at = None
                self.onset_progress = progress
                self.takeovers += 1
                return [Request.TAKEOVER]
            return []
        reason = self.rule.reason(self.progress, proposed, self._peek_expert())
        if reason is not None:
            self.reasons.append(reason)
            self.trigger_at = t + self.reaction_steps
            if self.reaction_steps == 0:
                self.trigger_at = None
                self.onset_progress = progress
                self.takeovers += 1
                return [Request.TAKEOVER]
        return []

    def _poll_demonstrating(self, mode: Mode) -> list[Request]:
        """Whole demonstrations: in control from the first step until the budget is spent."""
        if self.budget_left_s <= 0:
            return [Request.RELEASE] if mode is Mode.HUMAN else []
        if mode in (Mode.AUTONOMOUS, Mode.RESET):  # from the first step: queued behind the reset
            self.takeovers += 1
            return [Request.TAKEOVER]
        return []

    def act(self, obs: dict[str, Any]) -> np.ndarray:
        if not self.in_control:
            # Re-plan from the scene as the policy left it.
            resume_expert(self.expert, self.robot.env)
            self.in_control = True
        self.spent_s += 1.0 / self.rate_hz
        return self.expert.act(None, self.robot.env)

    def _peek_expert(self) -> np.ndarray | None:
        """What the expert would command from the current scene, without disturbing it."""
        probe = copy.copy(self.expert)
        probe.cmd = self.expert.cmd.copy()
        resume_expert(probe, self.robot.env)
        try:
            return probe.act(None, self.robot.env)
        except Exception:  # a probe must never break the session
            return None


def resume_expert(expert: Any, env: Any) -> None:
    """Restart ``expert`` from the env's current scene, keeping a held object held.

    ``expert.reset`` assumes a fresh scene (gripper open, approach phase); if the
    policy left the object in the gripper, keep it closed and continue from the lift
    so the expert does not drop it.
    """
    from robot_learn.envs.task_base import LIFT

    expert.reset(env)
    if env.unwrapped.is_held():
        expert.grip = 1.0
        expert.phase = LIFT
    if getattr(expert, "rng", None) is not None:
        expert.rng = np.random.default_rng(expert.rng.integers(1 << 31))
