"""Meta-World v3 tasks (Sawyer arm, 80 Hz) and their scripted expert policies.

Each seed draws the task's object and goal positions from the env's own
distribution (goal-observable variant, so the goal is in ``env_state``).

- ``state`` (4): hand x, y, z and gripper opening (0 closed .. 1 open).
- ``env_state`` (17): object 1 pos + quat, object 2 pos + quat (zeros when the
  task has one object), goal pos.
- actions (4): hand displacement x, y, z and gripper effort, each in [-1, 1].
- ``progress``: 1 on success, else Meta-World's shaped reward / 10.

Cameras: ``front`` is the ``corner2`` camera, which MuJoCo renders upside down
(Meta-World's corner cameras are rolled 180 degrees), so it is turned back;
``wrist`` is ``gripperPOV``. Shadows and reflections are off: they multiply
the render time (see benchmarks/bench_external.py) and carry nothing a policy needs.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..rendering import CameraRenderer
from .base import ExternalEnv
from .registry import require

# Our camera name -> (Meta-World camera, whether to turn the frame 180 degrees).
CAMERAS = {"front": ("corner2", True), "wrist": ("gripperPOV", False)}
MAX_REWARD = 10.0


def metaworld_instruction(task: str) -> str:
    """The instruction a Meta-World task is given: its name in words."""
    return task.replace("-", " ")


class MetaWorldEnv(ExternalEnv):
    """One Meta-World v3 task, e.g. ``MetaWorldEnv("peg-unplug-side")``."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 80}
    camera_names = tuple(CAMERAS)

    def __init__(self, task: str, *, max_steps: int, cameras: tuple[str, ...] = (),
                 image_size: int | tuple[int, int] = 96, render_mode: str | None = None):
        name = f"metaworld/{task}"
        env_dict = require("metaworld.env_dict", "metaworld", name)
        super().__init__(name, max_steps=max_steps, cameras=cameras, image_size=image_size, state_dim=4,
                         env_state_dim=17, action_low=-np.ones(4), action_high=np.ones(4),
                         instruction=metaworld_instruction(task), render_mode=render_mode)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.mw = env_dict.ALL_V3_ENVIRONMENTS_GOAL_OBSERVABLE[f"{task}-v3-goal-observable"](seed=0)
        self.mw.max_path_length = self.max_steps
        # Draw positions from the env's seeded RNG at each reset (see _reset).
        self.mw.seeded_rand_vec = True
        self.raw_obs = np.zeros(39)
        self._renderers: dict[tuple[int, int], CameraRenderer] = {}

    def _reset(self, seed: int) -> tuple[bool, float]:
        self.mw._freeze_rand_vec = False  # resample object/goal positions from the new seed
        self.mw.seed(seed)
        self.raw_obs, _ = self.mw.reset()
        self.mw._freeze_rand_vec = True
        return False, 0.0

    def _step(self, action: np.ndarray) -> tuple[float, bool, float]:
        self.raw_obs, reward, _, _, info = self.mw.step(action)
        success = bool(info["success"])
        progress = 1.0 if success else float(np.clip(reward / MAX_REWARD, 0.0, 1.0))
        return float(reward), success, progress

    def _state(self) -> tuple[np.ndarray, np.ndarray]:
        o = self.raw_obs
        return o[:4], np.concatenate([o[4:18], o[36:39]])

    def _render(self, camera: str, height: int, width: int) -> np.ndarray:
        if (height, width) not in self._renderers:
            self._renderers[(height, width)] = CameraRenderer(self.mw.model, height, width)
        mw_camera, turn = CAMERAS[camera]
        image = self._renderers[(height, width)].render(self.mw.data, (mw_camera,))[mw_camera]
        return image[::-1, ::-1] if turn else image

    def close(self):
        for r in self._renderers.values():
            r.close()
        self._renderers.clear()
        self.mw.close()


class DisplacementExpert:
    """A scripted expert in Meta-World's action space (hand displacement x, y, z and
    gripper effort, each in [-1, 1]) with optional Gaussian action noise (std, in action
    units, drawn from ``seed``): subclasses compute the clean action, :meth:`noisy` adds
    the noise and clips."""

    def __init__(self, noise: float = 0.0, seed: int | None = None):
        if noise < 0 or not math.isfinite(noise):
            raise ValueError(f"noise must be a finite number >= 0, got {noise}")
        self.noise = float(noise)
        self.rng = np.random.default_rng(seed)
        self.phase = 0

    def noisy(self, action: np.ndarray) -> np.ndarray:
        """``action`` plus the noise, clipped to [-1, 1], as float32."""
        if self.noise:
            action = action + self.rng.normal(0.0, self.noise, action.shape)
        return np.clip(action, -1.0, 1.0).astype(np.float32)


class MetaWorldExpert(DisplacementExpert):
    """Meta-World's scripted policy for a task, with optional Gaussian action noise.

    ``reset(env)`` then ``act(obs, env)`` per step (reads the raw 39-d Meta-World
    observation the adapter keeps). ``phase`` is always 0: the policies have none.
    """

    def __init__(self, task: str, noise: float = 0.0, seed: int | None = None):
        super().__init__(noise, seed)
        policies = require("metaworld.policies", "metaworld", f"metaworld/{task}")
        self.policy = policies.ENV_POLICY_MAP[f"{task}-v3"]()

    def reset(self, env) -> None:
        """Nothing to reset: the policies are stateless."""

    def act(self, obs, env) -> np.ndarray:
        """The policy's action for the env's current raw observation."""
        with warnings.catch_warnings():  # "Constant(s) may be too high": the env clips
            warnings.simplefilter("ignore")
            action = np.asarray(self.policy.get_action(env.unwrapped.raw_obs), dtype=np.float64)
        return self.noisy(action)
