"""Recording one episode step by step, committed to a store as one atomic append.

Every producer of episodes (expert demos, HITL sessions, teleop, time-reversal
recording) records through :class:`EpisodeRecorder`, so rows are laid out the
same way everywhere: row t holds the observation before action t, action t, the
policy's proposal, who was in control, and that step's reward, progress and phase.
The store casts every key to its canonical dtype on append.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np


class EpisodeRecorder:
    """Accumulates the rows of one episode.

    ``obs_keys`` are the low-dim observation keys kept from each observation (every
    camera under ``obs["images"]`` is kept as ``images/<camera>``).
    """

    def __init__(self, obs_keys: Sequence[str]) -> None:
        self.obs_keys = tuple(obs_keys)
        self.rows: dict[str, list[np.ndarray]] = {}

    def __len__(self) -> int:
        return len(self.rows.get("action", []))

    def record(self, obs: Mapping[str, Any], action: Any, *, policy_action: Any = None, intervention: bool = False,
               reward: float = 0.0, progress: float = 0.0, phase: int = 0, timestamp: float | None = None) -> None:
        """Add one step: ``obs`` seen before ``action`` was executed. ``policy_action``
        defaults to ``action`` (nobody else proposed anything); ``timestamp`` None
        records none."""
        values: dict[str, Any] = {key: obs[key] for key in self.obs_keys}
        values.update({f"images/{cam}": img for cam, img in (obs.get("images") or {}).items()})
        values.update(action=action, policy_action=action if policy_action is None else policy_action,
                      intervention=bool(intervention), reward=float(reward), progress=float(progress),
                      phase=int(phase), timestamp=timestamp)
        for key, value in values.items():
            if value is not None:
                self.rows.setdefault(key, []).append(np.array(value, copy=True))

    def steps(self) -> dict[str, np.ndarray]:
        """The episode's per-step arrays, ``[T, ...]`` per key."""
        if not len(self):
            raise ValueError("the recorder holds no steps")
        return {key: np.stack(values) for key, values in self.rows.items()}

    def commit(self, store: Any, meta: Mapping[str, Any]) -> int:
        """Append the episode to ``store`` (atomic) and start a new one; returns its index."""
        index = store.append_episode(self.steps(), dict(meta))
        self.rows = {}
        return index
