"""Training batches that mix offline data and the fleet's online episodes, per task.

Every task gets an equal part of each batch; within a task, ``online_share`` of it
comes from the fleet's online data of that task and the rest from the offline store
(demos). What counts as online data is ``online_data``:

- ``"hgdagger"`` (default; SOP's HG-DAgger update): the operator's runs of every
  episode (at least ``min_human_run`` steps, labelled with the operator's actions) and
  the whole of every autonomous success. The policy's own steps in an episode the
  operator had to rescue are left out.
- ``"successes"``: every successful episode whole (filtered BC), the policy's steps
  before and between takeovers included.

The runs are read in place (``WindowSampler``'s ``spans``): nothing is copied. A task
with no online data yet takes its whole part offline. The online store is re-read
every ``refresh_every`` batches while the writer appends to it; new episodes join the
mix then (only their ``intervention`` flags are read anew).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

ONLINE_DATA = ("hgdagger", "successes")


class OnlineOfflineSampler:
    """Batches of ``batch_size`` windows from ``offline`` (a store or view) and the store
    at ``online_path``; the window arguments are :class:`~robot_learn.data.WindowSampler`'s."""

    def __init__(self, offline: Any, online_path: str | Path, tasks: Sequence[str], *, obs_keys: Sequence[str],
                 obs_horizon: int, action_horizon: int, batch_size: int, online_share: float = 0.5,
                 online_data: str = "hgdagger", min_human_run: int = 2, refresh_every: int = 20,
                 seed: int = 0) -> None:
        if not 0.0 <= online_share <= 1.0:
            raise ValueError(f"online_share must be in [0, 1], got {online_share}")
        if online_data not in ONLINE_DATA:
            raise ValueError(f"online_data must be one of {', '.join(ONLINE_DATA)}, got {online_data!r}")
        if min_human_run < 1:
            raise ValueError(f"min_human_run must be >= 1, got {min_human_run}")
        if not tasks:
            raise ValueError("the sampler needs at least one task")
        self.offline, self.online_path, self.tasks = offline, Path(online_path), tuple(tasks)
        self.online_data, self.min_human_run = online_data, int(min_human_run)
        self._runs: list[list[tuple[int, int]] | None] = []  # per online episode: its operator runs (None: whole)
        self.window = dict(obs_keys=tuple(obs_keys), obs_horizon=int(obs_horizon),
                           action_horizon=int(action_horizon))
        self.batch_size, self.online_share = int(batch_size), float(online_share)
        self.refresh_every, self.seed = int(refresh_every), int(seed)
        self.batches = 0
        self.online_windows = 0     # windows drawn from online data so far
        self.online_episodes = 0    # online episodes in the mix now (whole, or some of their runs)
        self._online: Any = None
        self._mixture: Any = None
        self._built_at = -1         # online store episodes when the mixture was built
        self._rebuild()

    def sample(self) -> dict[str, Any]:
        if self.refresh_every and self.batches % self.refresh_every == 0:
            self._rebuild()
        self.batches += 1
        batch = self._mixture.sample()
        self.online_windows += self._online_per_batch
        return batch

    def __len__(self) -> int:
        return len(self._mixture)

    def state_dict(self) -> dict[str, Any]:
        # The mixture is rebuilt from the stores; its draws are seeded by the batch count.
        return {"batches": self.batches, "online_windows": self.online_windows}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.batches, self.online_windows = int(state["batches"]), int(state["online_windows"])
        self._built_at = -1
        self._rebuild()

    # ----------------------------------------------------------------------------------
    def _online_store(self) -> Any:
        from robot_learn.data import EpisodeStore

        if self._online is None:
            if not (self.online_path / "episode_store.json").exists():
                return None
            self._online = EpisodeStore.open(self.online_path, "r")
        else:
            self._online.refresh()
        return self._online

    def _online_part(self, online: Any, count: int, task: str) -> tuple[Any, dict[int, list[tuple[int, int]]]]:
        """The online episodes of ``task`` to sample and the spans of those used in part
        (None: no online data of the task yet)."""
        from robot_learn.loops.aggregation import runs

        first = len(self._runs)
        if self.online_data == "hgdagger" and count > first:
            # Each episode's runs are found once, from one read of the new episodes' flags.
            starts, ends = online.episode_starts[first:count], online.episode_ends[first:count]
            flags = online.read("intervention", int(starts[0]), int(ends[-1])).astype(bool)
            for s, e in zip(starts - starts[0], ends - starts[0]):
                human = flags[s:e]
                self._runs.append(runs(human, self.min_human_run) if human.any() else None)
        success = np.asarray(online.meta["success"][:count], dtype=bool)
        of_task = np.asarray(online.meta["task"][:count]) == task
        if self.online_data == "successes":
            chosen = np.flatnonzero(of_task & success)
            spans: dict[int, list[tuple[int, int]]] = {}
        else:
            rescued = np.array([r is not None for r in self._runs[:count]], dtype=bool)
            has_runs = np.array([bool(r) for r in self._runs[:count]], dtype=bool)
            chosen = np.flatnonzero(of_task & ((success & ~rescued) | has_runs))
            spans = {int(e): self._runs[e] for e in chosen if self._runs[e] is not None}
        if not len(chosen):
            return None, {}
        from robot_learn.data.views import EpisodeView

        return EpisodeView(online, chosen), spans

    def _rebuild(self) -> None:
        from robot_learn.data import WindowSampler
        from robot_learn.loops.aggregation import MixtureSampler, split_batch

        online = self._online_store()
        count = online.num_episodes if online is not None else 0
        if count == self._built_at:
            return
        parts: dict[str, tuple[Any, float, dict]] = {}
        task_parts = split_batch(self.batch_size, {t: 1.0 for t in self.tasks})
        for task in self.tasks:
            offline = self.offline.view(task=task)
            if offline.num_episodes == 0:
                raise ValueError(f"the offline data has no episode of task '{task}'; "
                                 f"its tasks: {', '.join(sorted(set(map(str, self.offline.meta['task']))))}")
            fresh, spans = self._online_part(online, count, task) if count else (None, {})
            share = self.online_share if fresh is not None else 0.0
            parts[f"{task}/offline"] = (offline, (1.0 - share) * task_parts[task], {})
            if share:
                parts[f"{task}/online"] = (fresh, share * task_parts[task], spans)
        sizes = split_batch(self.batch_size, {name: w for name, (_, w, _) in parts.items()})
        seed = self.seed + 7919 * self.batches
        self._mixture = MixtureSampler({
            name: WindowSampler(parts[name][0], batch_size=size, seed=seed + i, spans=parts[name][2], **self.window)
            for i, (name, size) in enumerate(sizes.items())})
        self._online_per_batch = sum(size for name, size in sizes.items() if name.endswith("/online"))
        self.online_episodes = sum(parts[n][0].num_episodes for n in sizes if n.endswith("/online"))
        self._built_at = count
