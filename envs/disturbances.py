"""Mid-episode disturbances of the tabletop tasks: a wrapper that nudges and slips.

- ``nudge``: before the object to move is grasped, it is pushed a few cm sideways
  (once, at a random early step), so a plan made from the first frames goes stale.
- ``slip``: while the object is carried, the grasp opens once for a few steps, so the
  object falls and has to be picked up again.

Each kind happens in an episode with its own probability. What happens is drawn
from ``(seed, episode seed)`` at reset, so an evaluation on seeds ``s, s+1, ...`` meets the
same disturbances whichever env or worker runs which seed. Every step's ``info`` says
what began at that step (``info["disturbance"]``: ``"nudge"``, ``"slip"`` or ``""``) and
how many of each the episode has had (``info["disturbances"]``), so evaluation
reports can count them.

A nudge is skipped when every direction would put the object into another object,
under the gripper or out of the arm's reach, or when the object is already held at
the drawn step; a slip needs the object carried. Skipped disturbances are not counted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import gymnasium as gym
import numpy as np

from . import arm
from .task_base import ANGLE_RANGE, RADIUS_RANGE

DISTURBANCE_KINDS = ("nudge", "slip")
_LIFTED = 0.02  # m above its resting height: the object is being carried
_GRIPPER_CLEAR = 0.05  # m: a nudge lands at least this far (horizontally) from the grasp centre...
_GRIPPER_ABOVE = 0.03  # m: ...or with the grasp centre this far above the object's top
_OBJECT_GAP = 0.005  # m between footprints after a nudge


def check_disturbance_kinds(kinds: Sequence[str]) -> tuple[str, ...]:
    """``kinds`` as a tuple; ValueError naming an unknown kind and the valid ones."""
    if isinstance(kinds, str):
        kinds = [kinds]
    for kind in kinds:
        if kind not in DISTURBANCE_KINDS:
            raise ValueError(f"unknown disturbance {kind!r}; valid: {', '.join(DISTURBANCE_KINDS)}")
    return tuple(dict.fromkeys(kinds))


@dataclass(frozen=True)
class Disturbances:
    """Which disturbances happen, how often, and how large they are.

    ``probabilities`` maps each kind (``nudge``, ``slip``) to its chance per episode;
    kinds left out never happen. :meth:`of` builds one from a list of kinds that
    share a probability (the CLI's ``task.disturbances=[nudge,slip]``).
    """

    probabilities: Mapping[str, float] = field(default_factory=dict)
    seed: int = 0
    nudge_distance: float = 0.03            # m, horizontal
    nudge_steps: tuple[int, int] = (1, 10)  # the nudge's step, drawn from this range (inclusive)
    slip_after: tuple[int, int] = (3, 8)    # carried steps before the grasp opens, drawn likewise
    release_steps: int = 4                  # steps the gripper is held open (0.4 s)

    def __post_init__(self) -> None:
        check_disturbance_kinds(list(self.probabilities))
        for kind, p in self.probabilities.items():
            if not 0.0 <= float(p) <= 1.0:
                raise ValueError(f"disturbance probability of {kind!r} must be in [0, 1], got {p}")
        if self.nudge_distance <= 0:
            raise ValueError(f"nudge_distance must be > 0 (m), got {self.nudge_distance}")
        for name in ("nudge_steps", "slip_after"):
            low, high = getattr(self, name)
            if not 1 <= low <= high:
                raise ValueError(f"{name} must be a range (low, high) with 1 <= low <= high, got {(low, high)}")
        if self.release_steps < 1:
            raise ValueError(f"release_steps must be >= 1, got {self.release_steps}")

    @classmethod
    def of(cls, kinds: Sequence[str], probability: float = 1.0, seed: int = 0, **sizes: Any) -> "Disturbances":
        """Every kind in ``kinds`` with the same ``probability`` per episode."""
        return cls({k: float(probability) for k in check_disturbance_kinds(kinds)}, seed=seed, **sizes)

    def draw(self, rng: np.random.Generator) -> dict[str, Any]:
        """One episode's disturbances: whether each kind happens, the nudge's step and
        direction, and how many carried steps precede the slip. Every number is drawn
        every time, so one kind's outcome never depends on another's probability."""
        happens = {k: bool(rng.random() < self.probabilities.get(k, 0.0)) for k in DISTURBANCE_KINDS}
        return {
            "nudge": happens["nudge"], "nudge_step": int(rng.integers(self.nudge_steps[0], self.nudge_steps[1] + 1)),
            "nudge_angle": float(rng.uniform(-math.pi, math.pi)),
            "slip": happens["slip"], "slip_after": int(rng.integers(self.slip_after[0], self.slip_after[1] + 1)),
        }

    @property
    def kinds(self) -> tuple[str, ...]:
        """The kinds that can happen (probability above zero)."""
        return tuple(k for k in DISTURBANCE_KINDS if self.probabilities.get(k, 0.0) > 0.0)


class DisturbanceWrapper(gym.Wrapper):
    """Applies :class:`Disturbances` to a tabletop env (see the module docstring)."""

    def __init__(self, env: gym.Env, disturbances: Disturbances) -> None:
        from .base_env import TabletopEnv

        if not isinstance(env.unwrapped, TabletopEnv):
            raise ValueError(f"disturbances ({', '.join(disturbances.kinds)}) need one of our tabletop tasks; "
                             f"got {type(env.unwrapped).__name__}")
        super().__init__(env)
        self.disturbances = disturbances
        self._rng = np.random.default_rng(disturbances.seed)  # for resets without a seed
        self.schedule: dict[str, Any] = {}
        self.counts = dict.fromkeys(DISTURBANCE_KINDS, 0)

    # ----- episode ------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        d = self.disturbances
        self.schedule = d.draw(self._rng if seed is None else np.random.default_rng([d.seed, seed]))
        self.counts = dict.fromkeys(DISTURBANCE_KINDS, 0)
        self._carried = 0
        self._open_for = 0
        return obs, {**info, "disturbance": "", "disturbances": dict(self.counts)}

    def step(self, action):
        env, s = self.env.unwrapped, self.schedule
        event = ""
        if s.get("nudge") and env.steps + 1 >= s["nudge_step"]:
            s["nudge"] = False  # one try, at the drawn step
            if self._nudge(env):
                event = "nudge"
        if self._open_for == 0 and s.get("slip") and self._carrying(env):
            self._carried += 1
            if self._carried >= s["slip_after"]:
                s["slip"] = False
                self._open_for = self.disturbances.release_steps
                event = "slip"
        if self._open_for > 0:
            self._open_for -= 1
            action = self._with_gripper_open(env, action)
        obs, reward, terminated, truncated, info = self.env.step(action)
        if event:
            self.counts[event] += 1
        return obs, reward, terminated, truncated, {**info, "disturbance": event, "disturbances": dict(self.counts)}

    # ----- nudge --------------------------------------------------------------------
    def _nudge(self, env: Any) -> bool:
        """Push the object to move along the drawn direction, or the nearest of eight
        directions that keeps it clear; False when none does or it is already held."""
        task = env.task
        pos = np.array(env.object_pose("move")[0])
        if env.is_held() or pos[2] > task.move_kind.rest_z + _LIFTED:
            return False
        others = [(np.array(env.object_pose(role)[0][:2]), kind.footprint)
                  for role, kind in (("target", task.target_kind), ("distractor", task.distractor_kind))
                  if role in env.layout.roles]
        tcp = env.tcp_pose()[0]
        top = pos[2] + task.move_kind.rest_z
        for k in (0, 1, -1, 2, -2, 3, -3, 4):  # the drawn direction first, then turning away from it
            angle = self.schedule["nudge_angle"] + k * math.pi / 4
            offset = self.disturbances.nudge_distance * np.array([math.cos(angle), math.sin(angle)])
            new = pos[:2] + offset
            r, a = math.hypot(*new), math.atan2(new[1], new[0])
            reachable = RADIUS_RANGE[0] <= r <= RADIUS_RANGE[1] and ANGLE_RANGE[0] <= a <= ANGLE_RANGE[1]
            clear = all(np.linalg.norm(new - xy) >= task.move_kind.footprint + fp + _OBJECT_GAP for xy, fp in others)
            free_of_gripper = np.linalg.norm(new - tcp[:2]) >= _GRIPPER_CLEAR or tcp[2] >= top + _GRIPPER_ABOVE
            if reachable and clear and free_of_gripper:
                env.shift_object("move", offset)
                return True
        return False

    # ----- slip ---------------------------------------------------------------------
    @staticmethod
    def _carrying(env: Any) -> bool:
        return env.is_held() and env.object_pose("move")[0][2] > env.task.move_kind.rest_z + _LIFTED

    @staticmethod
    def _with_gripper_open(env: Any, action: Any) -> np.ndarray:
        """``action`` with its gripper command replaced by fully open."""
        a = np.array(action, copy=True)
        if a.shape != env.action_space.shape or a.dtype.kind != "f":
            return a  # the env refuses it with its own message
        if env.action_mode == "pose":
            a[4] = 0.0  # the pose action's gripper: 0 open, 1 closed
        else:
            a[5] = arm.GRIPPER_OPEN
        return a
