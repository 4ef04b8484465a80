"""The MuJoCo twin of the arm behind the hardware ``Robot`` interface.

A :class:`SimRobot` wraps one task env so that code written against the
``Robot`` protocol (``connect``, ``disconnect``, ``get_observation``,
``send_action``) runs unchanged in simulation. It knows no learner and does not
import ``hardware``: it satisfies the protocol structurally.

Beyond the protocol it offers what only a simulator can: ``reset(seed)`` puts the
scene in a seeded initial state (on hardware a person resets the scene), and
``env`` gives scripted experts and simulated operators the privileged state.
"""

from __future__ import annotations

import time
from typing import Any, Mapping, Sequence

import numpy as np

JOINT_NAMES: tuple[str, ...] = (
    "shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll", "gripper")
POSE_ACTION_NAMES: tuple[str, ...] = ("x", "y", "z", "yaw", "gripper")


class SimRobotError(RuntimeError):
    """The twin was used out of order (not connected, no reset, episode over)."""


class SimRobot:
    """A ``Robot`` backed by the task env ``task`` (``make_env`` arguments).

    ``get_observation()`` returns joint positions keyed by joint name,
    ``"images"`` and ``"timestamps"`` like a real arm, plus the env's own keys
    (``"state"``, ``"env_state"``, ``"objects"``, ``"instruction"``; see
    :meth:`observation_spec`) and ``"info"``
    (``success``, ``progress``, ``phase``) of the latest step.
    ``send_action`` takes a pose action ``[x, y, z, yaw, gripper]`` (``action_mode="pose"``)
    or joint targets in ``JOINT_NAMES`` order (``"joint"``), as an array or a dict
    keyed by those names, steps the physics one control period, and returns what was sent.
    ``conditions`` (an :class:`~envs.conditions.EnvConditions`; None: the defaults) sets
    where :meth:`reset` puts the objects and which disturbances happen mid-episode.
    """

    def __init__(self, task: str, cameras: Sequence[str] = (), image_size: int = 96,
                 action_mode: str = "pose", max_steps: int | None = None, conditions: Any = None) -> None:
        from .conditions import DEFAULT_CONDITIONS
        from .registry import task_spec

        task_spec(task)  # unknown task -> ValueError listing the valid ones
        self.task = task
        self.conditions = conditions or DEFAULT_CONDITIONS
        self._make = lambda: self.conditions.make_env(task, cameras=tuple(cameras), image_size=image_size,
                                                      action_mode=action_mode, max_steps=max_steps)
        self.action_names = POSE_ACTION_NAMES if action_mode == "pose" else JOINT_NAMES
        self.env: Any = None
        self._obs: dict[str, Any] | None = None
        self._info: dict[str, Any] = {}
        self.terminated = self.truncated = False
        self.last_reward = 0.0

    # ----- Robot protocol --------------------------------------------------------
    @property
    def is_connected(self) -> bool:
        return self.env is not None

    def connect(self) -> None:
        """Build the simulator (idempotent)."""
        if self.env is None:
            self.env = self._make()

    def disconnect(self) -> None:
        """Close the simulator."""
        if self.env is not None:
            self.env.close()
            self.env = None
            self._obs = None

    def get_observation(self) -> dict[str, Any]:
        """The latest observation (see the class docstring)."""
        obs = self._require_obs()
        now = time.monotonic()
        out: dict[str, Any] = {name: float(q) for name, q in zip(JOINT_NAMES, obs["state"][:6])}
        images = dict(obs.get("images", {}))
        out.update({k: v for k, v in obs.items() if k not in ("images", "instruction")})
        out.update(images=images, timestamps={"joints": now, **{c: now for c in images}},
                   instruction=obs.get("instruction", ""), info=dict(self._info))
        return out

    def send_action(self, action: Mapping[str, float] | np.ndarray) -> dict[str, float]:
        """Step the env one control period with ``action``; returns the action sent."""
        self._require_obs()
        if self.terminated or self.truncated:
            raise SimRobotError("the episode is over (success or time limit); call reset() first")
        if isinstance(action, Mapping):
            missing = [n for n in self.action_names if n not in action]
            if missing:
                raise ValueError(f"action lacks {missing}; expected keys {list(self.action_names)}")
            action = np.array([action[n] for n in self.action_names], dtype=np.float32)
        action = np.asarray(action, dtype=np.float32)
        # The env rejects NaN/Inf and wrong shapes before touching the physics.
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._obs, self._info = obs, dict(info)
        self.last_reward = float(reward)
        self.terminated, self.truncated = bool(terminated), bool(truncated)
        return {n: float(v) for n, v in zip(self.action_names, action)}

    def observation_spec(self) -> dict[str, tuple[int, ...]]:
        """The array keys of :meth:`get_observation` a policy may read, with shapes:
        the env's low-dim keys (``state``, ``env_state``, ``objects``) and ``images/<camera>``."""
        env = self.env if self.env is not None else self._make()
        try:
            spec: dict[str, tuple[int, ...]] = {}
            for key, space in env.observation_space.spaces.items():
                if key == "images":
                    spec.update({f"images/{c}": tuple(s.shape) for c, s in space.spaces.items()})
                elif getattr(space, "shape", None):
                    spec[key] = tuple(space.shape)
            return spec
        finally:
            if env is not self.env:
                env.close()

    @property
    def workspace(self) -> Any:
        """Where pose actions can put the grasp centre (an ``envs.workspace.Workspace``);
        None in joint mode, whose actions name no position."""
        from .workspace import TABLETOP_WORKSPACE

        return TABLETOP_WORKSPACE if self.action_names == POSE_ACTION_NAMES else None

    # ----- simulator extras --------------------------------------------------------
    def reset(self, seed: int | None = None) -> dict[str, Any]:
        """Start an episode from the seeded initial scene; returns ``get_observation()``."""
        if self.env is None:
            raise SimRobotError("SimRobot is not connected; call connect() first")
        self._obs, info = self.env.reset(seed=seed)
        self._info = dict(info)
        self.terminated = self.truncated = False
        self.last_reward = 0.0
        return self.get_observation()

    @property
    def done(self) -> bool:
        """The env reported success or its time limit on the last step."""
        return self.terminated or self.truncated

    def _require_obs(self) -> dict[str, Any]:
        if self.env is None:
            raise SimRobotError("SimRobot is not connected; call connect() first")
        if self._obs is None:
            raise SimRobotError("no episode yet; call reset(seed) first")
        return self._obs


def make_sim_robot(task: str, start_spread: str = "wide", disturbances: Sequence[str] = (),
                   disturbance_probability: float = 1.0, disturbance_seed: int = 0, **kwargs: Any) -> SimRobot:
    """Factory used by the ``robot=sim_so101`` config (Hydra ``_target_``): the conditions
    come as the config's plain values (see :meth:`~envs.conditions.EnvConditions.of`)."""
    from .conditions import EnvConditions

    conditions = EnvConditions.of(start_spread, list(disturbances or []), disturbance_probability, disturbance_seed)
    return SimRobot(task, conditions=conditions, **kwargs)
