"""``EpisodeSaver``: an evaluation's episodes appended to a store (``robot-learn eval save_episodes=PATH``).

Rows are what the expert's demos record (:func:`robot_learn.envs.demos.run_expert`): row t
holds the observation before action t (``state`` and ``env_state``, or the low-dim keys an
existing store holds, and the policy's cameras only), action t, the reward of that
step and the progress of observation t. Each episode is one atomic append with
``source="rollout"``, its seed and whether it succeeded, so a policy's held-out rollouts can
train a world model or be inspected like any other store.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from robot_learn.data import EpisodeRecorder
from robot_learn.envs.demos import DEFAULT_OBS_KEYS, OPTIONAL_OBS_KEYS

# collect_demos records DEFAULT_OBS_KEYS unless asked for more: rollouts append to demo stores
LOW_DIM_KEYS = (*DEFAULT_OBS_KEYS, *OPTIONAL_OBS_KEYS)


class EpisodeSaver:
    """Records one wave's sub-envs step by step and appends their episodes to ``store`` at the wave's end."""

    def __init__(self, store: Any, task: str, cameras: Sequence[str], meta: Mapping[str, Any] | None = None) -> None:
        self.store, self.task, self.cameras = store, task, tuple(cameras)
        self.meta = dict(meta or {})
        self.saved = 0

    def start(self, obs: Mapping[str, Any], info: Mapping[str, Any], num_envs: int) -> None:
        """A wave began with ``obs`` (and the reset's ``info``) from every sub-env."""
        # A new store gets the demos' keys; an existing one the low-dim keys it already holds.
        wanted = [k for k in LOW_DIM_KEYS if k in self.store.keys] if self.store.num_episodes else DEFAULT_OBS_KEYS
        keys = tuple(k for k in wanted if k in obs)
        if not self.saved and self.store.num_episodes:
            self._check_fits(obs, keys)
        self.recorders = [EpisodeRecorder(keys) for _ in range(num_envs)]
        self.instructions = [str(text) for text in obs.get("instruction", [""] * num_envs)]
        self.progress = np.asarray(info.get("progress", np.zeros(num_envs)), dtype=float).copy()

    def _check_fits(self, obs: Mapping[str, Any], keys: Sequence[str]) -> None:
        """StoreError naming what differs, before any episode is run, when the store's episodes
        hold other keys or per-step shapes than these rollouts would."""
        from robot_learn.data import StoreError

        shapes = {key: tuple(np.asarray(obs[key][0]).shape) for key in keys}
        shapes.update({f"images/{cam}": tuple(np.asarray(obs["images"][cam][0]).shape) for cam in self.cameras})
        stored = {key for key in self.store.keys if key.startswith("images/") or key in LOW_DIM_KEYS}
        if stored != set(shapes):
            raise StoreError(f"save_episodes store {str(self.store.path)!r} holds {sorted(stored)}; these rollouts "
                             f"record {sorted(shapes)}: give a new store path")
        for key, shape in shapes.items():
            want = tuple(self.store.array(key).shape[1:])
            if want != shape:
                raise StoreError(f"save_episodes store {str(self.store.path)!r}: {key!r} is {want} per step there, "
                                 f"{shape} in these rollouts: give a new store path")

    def step(self, obs: Mapping[str, Any], action: np.ndarray, reward: Any, info: Mapping[str, Any],
             active: np.ndarray) -> None:
        """Sub-envs ``active`` saw ``obs`` and took ``action``, which gave ``reward`` and ``info``."""
        images = obs.get("images") or {}
        for k in np.flatnonzero(active):
            row = {key: obs[key][k] for key in self.recorders[k].obs_keys}
            row["images"] = {cam: images[cam][k] for cam in self.cameras}
            self.recorders[k].record(row, action[k], reward=float(np.asarray(reward)[k]), progress=self.progress[k])
            self.progress[k] = float(info["progress"][k]) if "progress" in info else self.progress[k]

    def finish(self, seeds: Sequence[int], success: Sequence[bool], count: int) -> None:
        """Append the wave's first ``count`` episodes (the rest ran spare seeds)."""
        for k in range(count):
            self.recorders[k].commit(self.store, {
                "task": self.task, "instruction": self.instructions[k], "success": bool(success[k]),
                "seed": int(seeds[k]), "source": "rollout", **self.meta})
            self.saved += 1
