"""The shell every external adapter shares: our observation dict, action checks,
``success``/``progress`` in info, termination on success and a ``max_steps`` limit.
A simulation that diverges ends its episode as a failure (see ``SimulationDiverged``).

A subclass wraps one benchmark env and implements ``_reset``, ``_step``,
``_state`` and ``_render``; this class turns them into the robot-learn contract
(see docs/interfaces.md, "Tasks").
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from ..base_env import _INSTRUCTION_CHARSET

VIDEO_SIZE = 256  # side of ``render()`` frames


class SimulationDiverged(Exception):
    """Raised by a subclass's ``_step`` when the wrapped simulation became invalid (e.g.
    dm_control's PhysicsError on MuJoCo's BADQACC). ``step`` ends the episode: truncated,
    ``success`` False, ``diverged`` True in info and the progress reached before it."""


class ExternalEnv(gym.Env):
    """One external benchmark task presented with robot-learn conventions.

    Observations: ``state`` (proprioception), ``env_state`` (privileged object
    state), ``images`` ``{camera: uint8 [H, W, 3]}`` and ``instruction``.
    Info: ``success`` (bool) and ``progress`` (float in [0, 1]); ``diverged`` (True)
    on the step that ended the episode because the simulation blew up.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}
    camera_names: tuple[str, ...] = ()

    def __init__(self, name: str, *, max_steps: int, cameras: tuple[str, ...], image_size: int | tuple[int, int],
                 state_dim: int, env_state_dim: int, action_low: np.ndarray, action_high: np.ndarray,
                 instruction: str, render_mode: str | None = None):
        cams = tuple(cameras)
        for cam in cams:
            if cam not in self.camera_names:
                raise ValueError(f"unknown camera {cam!r} for task {name!r}; valid cameras: "
                                 f"{', '.join(self.camera_names)}")
        if len(set(cams)) != len(cams):
            raise ValueError(f"duplicate camera in {cams!r}")
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"unknown render_mode {render_mode!r}; valid: None, 'rgb_array'")
        if int(max_steps) < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps}")
        h, w = (image_size, image_size) if np.isscalar(image_size) else tuple(image_size)
        if int(h) < 1 or int(w) < 1:
            raise ValueError(f"image_size must be positive, got {image_size!r}")
        self.name = name
        self.cameras = cams
        self.image_hw = (int(h), int(w))
        self.max_steps = int(max_steps)
        self.render_mode = render_mode
        self.instruction = instruction
        self.steps = 0
        self.progress = 0.0  # of the last frame
        self.action_space = spaces.Box(np.asarray(action_low, np.float32), np.asarray(action_high, np.float32),
                                       dtype=np.float32)
        image_spaces = {c: spaces.Box(0, 255, (*self.image_hw, 3), np.uint8) for c in cams}
        self.observation_space = spaces.Dict({
            "state": spaces.Box(-np.inf, np.inf, (state_dim,), np.float32),
            "env_state": spaces.Box(-np.inf, np.inf, (env_state_dim,), np.float32),
            "images": spaces.Dict(image_spaces),
            "instruction": spaces.Text(max_length=200, charset=_INSTRUCTION_CHARSET),
        })

    # ----- to implement -------------------------------------------------------------
    def _reset(self, seed: int) -> tuple[bool, float]:
        """Start the wrapped env's episode from ``seed``; returns (success, progress)."""
        raise NotImplementedError

    def _step(self, action: np.ndarray) -> tuple[float, bool, float]:
        """Step the wrapped env; returns (reward, success, progress)."""
        raise NotImplementedError

    def _state(self) -> tuple[np.ndarray, np.ndarray]:
        """(state, env_state) of the current frame."""
        raise NotImplementedError

    def _render(self, camera: str, height: int, width: int) -> np.ndarray:
        """One uint8 [height, width, 3] frame of ``camera``."""
        raise NotImplementedError

    # ----- gymnasium API ------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        if seed is None:  # a fresh episode from the env's own RNG
            seed = int(self.np_random.integers(2**31 - 1))
        success, progress = self._reset(int(seed))
        self.steps, self.progress = 0, float(progress)
        return self._obs(), {"success": bool(success), "progress": float(progress)}

    def step(self, action):
        a = self._check_action(action)
        self.steps += 1
        try:
            reward, success, progress = self._step(a)
        except SimulationDiverged:
            return self._obs(), 0.0, False, True, {"success": False, "progress": self.progress, "diverged": True}
        self.progress = float(progress)
        terminated = bool(success)
        truncated = (not terminated) and self.steps >= self.max_steps
        return self._obs(), float(reward), terminated, truncated, {"success": terminated,
                                                                    "progress": self.progress}

    def render(self):
        """Frame of the first camera (``VIDEO_SIZE`` square) for videos; None without render_mode."""
        if self.render_mode != "rgb_array":
            return None
        return self._render(self.camera_names[0], VIDEO_SIZE, VIDEO_SIZE)

    # ----- helpers --------------------------------------------------------------------
    def _check_action(self, action) -> np.ndarray:
        shape = self.action_space.shape
        a = np.asarray(action)
        if a.dtype.kind != "f":
            raise ValueError(f"action dtype must be floating point (float32), got {a.dtype}; expected shape {shape}")
        if a.shape != shape:
            raise ValueError(f"action shape must be {shape} for task {self.name!r}, got {a.shape}")
        if not np.isfinite(a).all():
            raise ValueError(f"action contains NaN or Inf: {a.tolist()}")
        return a.astype(np.float32)

    def _obs(self) -> dict[str, Any]:
        state, env_state = self._state()
        images = {c: np.ascontiguousarray(self._render(c, *self.image_hw), dtype=np.uint8) for c in self.cameras}
        return {"state": np.asarray(state, np.float32), "env_state": np.asarray(env_state, np.float32),
                "images": images, "instruction": self.instruction}
