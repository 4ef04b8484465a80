"""Groups of rollouts from one start, for group-relative policy optimisation (:mod:`.grpo`).

A group is ``G`` rollouts of the same policy from the same start, differing only in
the policy's sampling (and, in a stochastic world model, its imagination). Two kinds
of group env share one small interface (``group_size``, ``reset(start, seed)``,
``step(actions)``, ``close()``), with vector-env style batched observations:

- :class:`ImaginedGroup`: the ``G`` rollouts are imagined together by a world model
  (one batched :class:`~robot_learn.world_models.imagination.Imagination`), starting
  from the first frames of a stored episode; its scorer says when each succeeds. A
  rollout that imagines a NaN or far out-of-range frame ends there as a failure and is
  reported.
- :class:`SimGroup`: ``G`` copies of the MuJoCo task reset with the same seed.

:func:`roll_group` runs a discrete-diffusion policy in either, recording for every
chunk it plans the observation, the decoding trace (tokens after each round) and which
rollouts were still running, which is what :mod:`.grpo` scores again under new weights.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from robot_learn.data import EpisodeRecorder


@dataclass
class Chunk:
    """One planned chunk of a group: the policy's (stacked) observation, the decoding
    trace ``[G, K, L]`` and which rollouts were running when it was planned ``[G]``."""

    obs: dict[str, Any]
    trace: torch.Tensor
    alive: torch.Tensor


@dataclass
class Group:
    """A finished group: per-rollout success and length, the chunks, the episodes
    (one :class:`EpisodeRecorder` per rollout) and the rollouts a bad frame stopped."""

    start: int
    success: np.ndarray
    length: np.ndarray
    chunks: list[Chunk] = field(default_factory=list)
    episodes: list[EpisodeRecorder] = field(default_factory=list)
    stopped: dict[int, str] = field(default_factory=dict)  # rollout -> why a bad frame stopped it (a failure)
    instruction: str = ""


class ImaginedGroup:
    """``group_size`` rollouts imagined together by ``model`` from stored episode ``starts``."""

    def __init__(self, model: Any, starts: Any, scorer: Any, max_steps: int, group_size: int) -> None:
        self.model, self.starts, self.scorer = model.eval(), starts, scorer
        self.max_steps, self.group_size = int(max_steps), int(group_size)
        self.cameras = model.config.cameras  # stacked along the channels; the scorer reads the first
        self._imagination: Any = None
        self._instruction = ""
        self._steps = 0

    def describe(self, start: int) -> str:
        return f"stored episode {self._episode(start)}"

    def _episode(self, start: int) -> int:
        episodes = self.starts.episodes
        return int(episodes[start % len(episodes)])

    def _obs(self, frames: torch.Tensor, states: torch.Tensor) -> dict[str, Any]:
        from robot_learn.world_models.modeling_world_model import split_cameras

        return {"state": states.cpu().numpy().astype(np.float32),
                "images": split_cameras(frames.cpu().numpy(), self.cameras),
                "instruction": [self._instruction] * self.group_size}

    def reset(self, start: int, seed: int) -> dict[str, Any]:
        from robot_learn.world_models.env import start_frames
        from robot_learn.world_models.imagination import Imagination

        g = self.group_size
        frames, states, self._instruction = start_frames(self.starts.store, self._episode(start), self.cameras,
                                                         self.model.config.history)
        generator = torch.Generator(device=self.model.device).manual_seed(int(seed))
        self._imagination = Imagination(self.model, np.repeat(frames[None], g, 0), np.repeat(states[None], g, 0),
                                        generator=generator)
        self._steps = 0
        return self._obs(torch.as_tensor(frames[-1:]).repeat(g, 1, 1, 1), torch.as_tensor(states[-1:]).repeat(g, 1))

    def step(self, actions: np.ndarray) -> tuple[dict[str, Any], dict[str, Any]]:
        """Advance all rollouts; returns obs and ``success``, ``progress``, ``ended`` (each ``[G]``)
        and ``problems`` (per rollout: why its frame stopped it, or None)."""
        frames, states, problems = self._imagination.step(actions)
        self._steps += 1
        g = self.group_size
        success, progress = np.zeros(g, dtype=bool), np.zeros(g)
        frames_np, states_np = frames.cpu().numpy(), states.cpu().numpy()
        for i in range(g):
            if problems[i] is None:
                success[i], progress[i] = self.scorer.score(frames_np[i, ..., :3], states_np[i], self._instruction)
        ended = success | np.array([p is not None for p in problems]) | (self._steps >= self.max_steps)
        return self._obs(frames, states), {"success": success, "progress": progress, "ended": ended,
                                           "problems": problems}

    def close(self) -> None:
        """Forget the rollouts and close the start store (the group env owns it)."""
        self._imagination = None
        self.starts.store.close()


class SimGroup:
    """``group_size`` copies of the MuJoCo ``task``; start ``s`` is the reset seed ``seed_base + s``."""

    def __init__(self, task: str, cameras: tuple[str, ...], image_size: int, max_steps: int, group_size: int,
                 seed_base: int = 100_000) -> None:
        from robot_learn.evaluation.rollout import make_vector_env

        self.group_size, self.seed_base = int(group_size), int(seed_base)
        self.envs = make_vector_env(task, self.group_size, cameras, image_size, max_steps, "sync")
        self._seeds: list[int] = []

    def describe(self, start: int) -> str:
        return f"seed {self.seed_base + start}"

    def reset(self, start: int, seed: int) -> dict[str, Any]:
        self._seeds = [self.seed_base + int(start)] * self.group_size
        obs, _ = self.envs.reset(seed=self._seeds)
        return obs

    def step(self, actions: np.ndarray) -> tuple[dict[str, Any], dict[str, Any]]:
        obs, _, terminated, truncated, info = self.envs.step(actions)
        ended = np.asarray(terminated) | np.asarray(truncated)
        if ended.any() and not ended.all():  # keep finished copies valid (autoreset is off) until the group ends
            self.envs.reset(seed=self._seeds, options={"reset_mask": ended.copy()})
        return obs, {"success": np.asarray(info["success"], dtype=bool), "progress": np.asarray(info["progress"]),
                     "ended": ended, "problems": [None] * self.group_size}

    def close(self) -> None:
        self.envs.close()


class _RecordingPredict:
    """``predict`` for ``Policy.select_action``: decodes with a trace and keeps each chunk."""

    def __init__(self, policy: Any) -> None:
        self.policy = policy
        self.planned: list[tuple[dict[str, Any], torch.Tensor]] = []

    def __call__(self, obs: dict[str, Any], generator: torch.Generator | None = None) -> torch.Tensor:
        p = self.policy
        tokens = p.predict_tokens(obs, generator, keep_trace=True)
        self.planned.append((_detached(obs), torch.stack(p.last_decode.trace, dim=1)))
        return p.tokenizer.decode(tokens.reshape(tokens.shape[0], p.action_horizon, p.action_dim))


def _detached(tree: Any) -> Any:
    if isinstance(tree, torch.Tensor):
        return tree.detach().clone()
    if isinstance(tree, dict):
        return {k: _detached(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(_detached(v) for v in tree)
    return tree


def _one(obs: dict[str, Any], i: int) -> dict[str, Any]:
    """Rollout ``i``'s observation from a batched one, as the episode recorder takes it."""
    return {"state": np.asarray(obs["state"][i]),
            "images": {c: np.asarray(f[i]) for c, f in (obs.get("images") or {}).items()}}


@torch.no_grad()
def roll_group(policy: Any, env: Any, start: int, seed: int, action_low: np.ndarray,
               action_high: np.ndarray) -> Group:
    """``env.group_size`` rollouts of ``policy`` from ``start`` (see the module docstring);
    the policy samples with its current decode settings, seeded by ``seed``."""
    from robot_learn.evaluation.rollout import vector_policy_obs

    g = env.group_size
    obs = env.reset(start, seed)
    policy.reset()
    generator = torch.Generator(device=policy.device).manual_seed(int(seed))
    record = _RecordingPredict(policy)
    alive = np.ones(g, dtype=bool)
    success = np.zeros(g, dtype=bool)
    length = np.zeros(g, dtype=int)
    episodes = [EpisodeRecorder(("state",)) for _ in range(g)]
    group = Group(start, success, length, episodes=episodes, instruction=str(obs["instruction"][0]))
    needed = policy.obs_shapes
    while alive.any():
        planned = len(record.planned)
        action = policy.select_action(vector_policy_obs(obs, needed, g), generator=generator, predict=record)
        if len(record.planned) > planned:
            chunk_obs, trace = record.planned[-1]
            group.chunks.append(Chunk(chunk_obs, trace, torch.as_tensor(alive.copy())))
        action = np.clip(action.cpu().numpy().astype(np.float32), action_low, action_high)
        next_obs, info = env.step(action)
        for i in np.flatnonzero(alive):
            episodes[i].record(_one(obs, i), action[i], reward=float(info["success"][i]),
                               progress=float(info["progress"][i]), phase=-1)
            length[i] += 1
            success[i] = bool(info["success"][i])
            if info["problems"][i] is not None:
                group.stopped[i] = f"{env.describe(start)}, rollout {i}, step {length[i]}: {info['problems'][i]}"
            if info["ended"][i]:
                alive[i] = False
        obs = next_obs
    return group
