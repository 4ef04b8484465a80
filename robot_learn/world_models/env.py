"""``WorldModelEnv``: a gymnasium env whose frames and states are imagined by a world model.

It keeps the MuJoCo tasks' contract for what a deployable policy reads: observations
``state``, ``images`` (the model's cameras) and ``instruction``; the task's action
space; ``success``, ``progress`` and ``phase`` in ``info``. Privileged keys
(``env_state``, ``objects``) do not exist here, so a policy reading them is refused
by the usual compatibility check, naming both sides.

A reset starts from the first ``history`` frames and states of a stored episode
(and takes its instruction), or (``start="sim"``) from a freshly rendered MuJoCo reset of
the task with the reset's seed: its frame and state repeated over the history, as the
training windows pad an episode's first step. A step imagines the next frame and state; a NaN or
far out-of-range frame ends the episode (``truncated``) with the reason in
``info["imagination_error"]``.
"""

from __future__ import annotations

from typing import Any, Sequence

import gymnasium as gym
import numpy as np
import torch

from robot_learn.data.views import EpisodeView
from robot_learn.world_models.imagination import Imagination
from robot_learn.world_models.modeling_world_model import VideoWorldModel, split_cameras, stack_cameras
from robot_learn.world_models.scorer import NearestFrameScorer, RolloutScorer


def start_frames(store: Any, episode: int, cameras: Sequence[str], history: int) -> tuple[np.ndarray, np.ndarray, str]:
    """The first ``history`` frames ``[K, H, W, 3 * cameras]`` (the cameras stacked along the
    channels) and states ``[K, S]`` of a stored episode, and its instruction: where an imagined
    rollout starts (short episodes repeat their last frame)."""
    a = int(store.episode_starts[episode])
    b = min(a + history, int(store.episode_ends[episode]))
    idx = np.clip(np.arange(a, a + history), a, b - 1) - a
    frames = stack_cameras({c: np.asarray(store.array(f"images/{c}")[a:b])[idx] for c in cameras}, cameras)
    states = np.asarray(store.array("state")[a:b], np.float32)[idx]
    return frames, states, str(store.meta["instruction"][episode])


START_CHOICES = ("store", "sim")


def check_start(start: str, key: str = "start") -> str:
    """``start`` if it is one of :data:`START_CHOICES`; a ValueError naming ``key`` and the choices otherwise."""
    if start not in START_CHOICES:
        raise ValueError(f"{key} '{start}' is not one of {', '.join(START_CHOICES)}")
    return start


def sim_start_frames(env: Any, seed: int, cameras: Sequence[str], history: int) -> tuple[np.ndarray, np.ndarray, str]:
    """A fresh reset of the MuJoCo task ``env`` with ``seed`` as a rollout start: its frame (the cameras
    stacked along the channels) and state, each repeated ``history`` times, and its instruction."""
    obs, _ = env.reset(seed=int(seed))
    frame = stack_cameras({c: np.asarray(obs["images"][c]) for c in cameras}, cameras)
    state = np.asarray(obs["state"], np.float32)
    return np.repeat(frame[None], history, axis=0), np.repeat(state[None], history, axis=0), str(obs["instruction"])


class WorldModelEnv(gym.Env):
    """Imagined rollouts of ``model`` started from episodes of ``starts`` or (``start="sim"``) from fresh
    MuJoCo resets of its task.

    ``action_space`` and ``instruction_space`` are the task's (the MuJoCo env's); ``scorer`` labels each step
    (default: :class:`NearestFrameScorer` over ``starts``).
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}

    def __init__(self, model: VideoWorldModel, starts: EpisodeView, action_space: gym.spaces.Box,
                 instruction_space: gym.spaces.Text, max_steps: int = 100,
                 scorer: RolloutScorer | None = None, start: str = "store") -> None:
        super().__init__()
        self.start = check_start(start)
        if starts.num_episodes < 1:
            raise ValueError("WorldModelEnv needs at least one stored episode to start from")
        self._sim: Any = None  # the MuJoCo task rendering fresh starts (start="sim"), made on first reset
        self.model = model.eval()
        self.starts = starts
        self.camera = model.config.camera  # the one the scorer reads
        self.cameras = model.config.cameras
        self.max_steps = int(max_steps)
        size, dim = model.config.image_size, model.config.state_dim
        if tuple(action_space.shape) != (model.config.action_dim,):
            raise ValueError(f"the task's actions have shape {tuple(action_space.shape)}; the world model "
                             f"takes ({model.config.action_dim},)")
        self.action_space = action_space
        self.observation_space = gym.spaces.Dict({
            "state": gym.spaces.Box(-np.inf, np.inf, (dim,), np.float32),
            "images": gym.spaces.Dict({c: gym.spaces.Box(0, 255, (size, size, 3), np.uint8) for c in self.cameras}),
            "instruction": instruction_space,
        })
        self.scorer = scorer if scorer is not None else NearestFrameScorer(starts, self.camera)
        self._imagination: Imagination | None = None
        self._instruction = ""
        self._steps = 0
        self.start_episode = -1  # the stored episode the current rollout started from

    def _obs(self, frame: np.ndarray, state: np.ndarray) -> dict[str, Any]:
        images = split_cameras(np.asarray(frame, np.uint8), self.cameras)
        return {"state": np.asarray(state, np.float32), "images": images, "instruction": self._instruction}

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        k = self.model.config.history
        if self.start == "sim":
            episode = -1
            sim_seed = int(seed) if seed is not None else int(self.np_random.integers(2**31))
            frames, states, self._instruction = sim_start_frames(self._simulator(), sim_seed, self.cameras, k)
        else:
            pick = (options or {}).get("episode")
            episode = int(pick) if pick is not None else int(self.np_random.choice(self.starts.episodes))
            frames, states, self._instruction = start_frames(self.starts.store, episode, self.cameras, k)
        # A seeded reset imagines the same rollout for the same actions, in any process.
        generator = None if seed is None else torch.Generator(device=self.model.device).manual_seed(int(seed))
        self._imagination = Imagination(self.model, frames[None], states[None], generator=generator)
        self._steps = 0
        self.start_episode = episode
        success, progress = self.scorer.score(frames[-1][..., :3], states[-1], self._instruction)
        return self._obs(frames[-1], states[-1]), {"success": False, "progress": progress, "phase": -1,
                                                   "start_episode": episode}

    def _simulator(self) -> Any:
        if self._sim is None:
            from robot_learn.envs import make_env

            self._sim = make_env(self.model.config.task, cameras=tuple(self.cameras),
                                 image_size=self.model.config.image_size)
        return self._sim

    def close(self) -> None:
        if self._sim is not None:
            self._sim.close()
            self._sim = None
        super().close()

    def step(self, action: Any) -> tuple[dict, float, bool, bool, dict]:
        if self._imagination is None:
            raise RuntimeError("call reset() before step()")
        action = np.asarray(action, dtype=np.float32)
        if action.shape != self.action_space.shape or not np.isfinite(action).all():
            raise ValueError(f"action must be a finite array of shape {self.action_space.shape}, "
                             f"got shape {action.shape}")
        frame, state, problems = self._imagination.step(action[None])
        frame_np, state_np = frame[0].cpu().numpy(), state[0].cpu().numpy()
        self._steps += 1
        info: dict[str, Any] = {"phase": -1, "start_episode": self.start_episode}
        if problems[0] is not None:
            info.update(success=False, progress=0.0, imagination_error=f"step {self._steps}: {problems[0]}")
            return self._obs(frame_np, state_np), 0.0, False, True, info
        success, progress = self.scorer.score(frame_np[..., :3], state_np, self._instruction)
        info.update(success=success, progress=progress)
        return (self._obs(frame_np, state_np), float(success), success, self._steps >= self.max_steps, info)

    def render(self) -> np.ndarray | None:
        if self._imagination is None:
            return None
        return self._imagination.frames[0, -1, ..., :3].cpu().numpy()  # the scored camera
