"""gym-aloha's bimanual tasks (``AlohaInsertion-v0``, ``AlohaTransferCube-v0``; 50 Hz).

- ``state`` (14): both arms' 6 joint positions + normalised gripper, left then right.
- ``env_state``: the objects' free-joint qpos (cube: 7; peg then socket: 14).
- actions (14): absolute joint targets in gym-aloha's order.
- ``progress``: the task's staged reward / 4 (4 = success).

The one camera is ``top``, rendered at ``image_size`` when asked for. ``step``
runs gym-aloha's task and physics without its observation, which would render
three 480x640 views every step (about 1 s a step on a shared CPU); ``reset``
still goes through gym-aloha (one such render per episode). The scripted
experts are ours (aloha_expert.py; success rates in docs/benchmarks.md).

Joint targets that make MuJoCo diverge (dm_control's ``PhysicsError``, e.g.
``mjWARN_BADQACC``; MuJoCo has then reset the state) end the episode as a failure
with ``diverged`` in info (``base.SimulationDiverged``) instead of raising.
"""

from __future__ import annotations

import numpy as np

from .base import ExternalEnv, SimulationDiverged
from .registry import require

MAX_REWARD = 4.0
INSTRUCTIONS = {"insertion": "insert the peg into the socket",
                "transfer_cube": "pick up the cube and hand it to the other arm"}


class AlohaEnv(ExternalEnv):
    """One gym-aloha task: ``AlohaEnv("insertion")`` or ``AlohaEnv("transfer_cube")``."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 50}
    camera_names = ("top",)

    def __init__(self, task: str, *, name: str, max_steps: int, cameras: tuple[str, ...] = (),
                 image_size: int | tuple[int, int] = 96, render_mode: str | None = None):
        aloha_env = require("gym_aloha.env", "gym-aloha", name)
        self._physics_error = require("dm_control.rl.control", "dm-control", name).PhysicsError
        self.aloha = aloha_env.AlohaEnv(task, obs_type="pixels_agent_pos")
        self._task = self.aloha._env.task
        self._physics = self.aloha._env.physics
        env_state_dim = len(self._task.get_env_state(self._physics))
        super().__init__(name, max_steps=max_steps, cameras=cameras, image_size=image_size, state_dim=14,
                         env_state_dim=env_state_dim, action_low=self.aloha.action_space.low,
                         action_high=self.aloha.action_space.high, instruction=INSTRUCTIONS[task],
                         render_mode=render_mode)

    def _reset(self, seed: int) -> tuple[bool, float]:
        self.aloha.reset(seed=seed)
        return False, 0.0

    def _step(self, action: np.ndarray) -> tuple[float, bool, float]:
        # dm_control's Environment.step less its observation: gym-aloha's task renders
        # three 480x640 cameras there (about 1 s a step on a shared CPU), which we never read.
        env = self.aloha._env
        self._task.before_step(action, self._physics)
        try:
            self._physics.step(env._n_sub_steps)
        except self._physics_error as err:
            raise SimulationDiverged(str(err)) from err
        self._task.after_step(self._physics)
        reward = float(self._task.get_reward(self._physics))
        return reward, reward >= MAX_REWARD, reward / MAX_REWARD

    def _state(self) -> tuple[np.ndarray, np.ndarray]:
        return self._task.get_qpos(self._physics), self._task.get_env_state(self._physics)

    def _render(self, camera: str, height: int, width: int) -> np.ndarray:
        return self._physics.render(height=height, width=width, camera_id=camera)

    def close(self):
        self.aloha.close()
