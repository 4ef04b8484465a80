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

The selected steps are copied, as episodes of their own, into ``curated_path`` (derived
data: emptied when the sampler is built, then filled from the online store). A task
with no online data yet takes its whole part offline. The online store is re-read every
``refresh_every`` batches while the writer appends to it; new episodes join the mix then.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence


ONLINE_DATA = ("hgdagger", "successes")


class OnlineOfflineSampler:
    """Batches of ``batch_size`` windows from ``offline`` (a store or view) and the store
    at ``online_path``, curated into ``curated_path``; the window arguments are
    :class:`~robot_learn.data.WindowSampler`'s."""

    def __init__(self, offline: Any, online_path: str | Path, tasks: Sequence[str], *, obs_keys: Sequence[str],
                 obs_horizon: int, action_horizon: int, batch_size: int, curated_path: str | Path,
                 online_share: float = 0.5, online_data: str = "hgdagger", min_human_run: int = 2,
                 refresh_every: int = 20, seed: int = 0) -> None:
        import shutil

        from robot_learn.data import EpisodeStore

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
        if Path(curated_path).resolve() == self.online_path.resolve():
            raise ValueError(f"curated_path must not be the online store {self.online_path}: it is emptied")
        if Path(curated_path).exists():
            shutil.rmtree(curated_path)
        self.curated = EpisodeStore.open_or_create(curated_path)
        self._curated_upto = 0      # online episodes looked at so far
        self.window = dict(obs_keys=tuple(obs_keys), obs_horizon=int(obs_horizon),
                           action_horizon=int(action_horizon))
        self.batch_size, self.online_share = int(batch_size), float(online_share)
        self.refresh_every, self.seed = int(refresh_every), int(seed)
        self.batches = 0
        self.online_windows = 0     # windows drawn from online data so far
        self.online_episodes = 0    # curated online episodes (runs and autonomous successes) in the mix now
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

    def _curate(self, online: Any, count: int) -> None:
        """Copy the online data of online episodes ``[_curated_upto, count)`` to the curated store."""
        import numpy as np

        from robot_learn.loops.aggregation import human_steps_mask, runs, write_selection

        meta = online.meta
        for e in range(self._curated_upto, count):
            length = int(online.episode_ends[e] - online.episode_starts[e])
            human = human_steps_mask(online, e)
            if self.online_data == "hgdagger" and human.any():
                spans, source = runs(human, min_length=self.min_human_run), "intervention"
            else:
                spans = [(0, length)] if bool(meta["success"][e]) else []
                source = str(np.asarray(meta["source"])[e])
            write_selection(self.curated, online, {e: spans}, source, self.curated.keys or None)
        self._curated_upto = count

    def _rebuild(self) -> None:
        from robot_learn.data import WindowSampler
        from robot_learn.loops.aggregation import MixtureSampler, split_batch

        online = self._online_store()
        count = online.num_episodes if online is not None else 0
        if count == self._built_at:
            return
        if count > self._curated_upto:
            self._curate(online, count)
        curated = self.curated if self.curated.num_episodes else None
        parts: dict[str, tuple[Any, float]] = {}
        task_parts = split_batch(self.batch_size, {t: 1.0 for t in self.tasks})
        for task in self.tasks:
            offline = self.offline.view(task=task)
            if offline.num_episodes == 0:
                raise ValueError(f"the offline data has no episode of task '{task}'; "
                                 f"its tasks: {', '.join(sorted(set(map(str, self.offline.meta['task']))))}")
            fresh = curated.view(task=task) if curated is not None else None
            share = self.online_share if fresh is not None and fresh.num_episodes else 0.0
            parts[f"{task}/offline"] = (offline, (1.0 - share) * task_parts[task])
            if share:
                parts[f"{task}/online"] = (fresh, share * task_parts[task])
        sizes = split_batch(self.batch_size, {name: w for name, (_, w) in parts.items()})
        seed = self.seed + 7919 * self.batches
        self._mixture = MixtureSampler({
            name: WindowSampler(parts[name][0], batch_size=size, seed=seed + i, **self.window)
            for i, (name, size) in enumerate(sizes.items())})
        self._online_per_batch = sum(size for name, size in sizes.items() if name.endswith("/online"))
        self.online_episodes = sum(parts[n][0].num_episodes for n in sizes if n.endswith("/online"))
        self._built_at = count
