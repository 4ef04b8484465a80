"""Filtered views of an episode store, selected by per-episode metadata."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping

import numpy as np

from robot_learn.data.errors import StoreError
from robot_learn.data.schema import check_source
from robot_learn.data.stats import compute_stats

if TYPE_CHECKING:
    from robot_learn.data.store import EpisodeStore

FILTER_FIELDS = ("source", "round", "success", "task")


def select_episodes(meta: Mapping[str, np.ndarray], **filters: Any) -> np.ndarray:
    """Indices of episodes whose meta match every filter (a value or a list of values)."""
    unknown = sorted(set(filters) - set(FILTER_FIELDS))
    if unknown:
        raise StoreError(f"unknown filter {unknown}; valid filters: {', '.join(FILTER_FIELDS)}")
    n = len(meta["task"])
    keep = np.ones(n, dtype=bool)
    for name, wanted in filters.items():
        if wanted is None:
            continue
        values = list(wanted) if _is_list(wanted) else [wanted]
        if name == "source":
            for v in values:
                check_source(v)
        keep &= np.isin(meta[name], np.asarray(values))
    return np.flatnonzero(keep).astype(np.int64)


def _is_list(value: Any) -> bool:
    return isinstance(value, (list, tuple, set, frozenset, np.ndarray))


class EpisodeView:
    """A subset of a store's episodes. `.episodes` are store episode indices (sorted)."""

    def __init__(self, store: "EpisodeStore", episodes: Iterable[int]) -> None:
        self.store = store
        self.episodes = np.unique(np.asarray(list(episodes), dtype=np.int64))
        if len(self.episodes) and (self.episodes[0] < 0 or self.episodes[-1] >= store.num_episodes):
            raise StoreError(f"view episodes must lie in [0, {store.num_episodes}); "
                             f"got {self.episodes.min()}..{self.episodes.max()}")

    @property
    def num_episodes(self) -> int:
        return len(self.episodes)

    @property
    def num_frames(self) -> int:
        return int(self.lengths.sum())

    @property
    def lengths(self) -> np.ndarray:
        """Steps in each selected episode, in episode order."""
        return self.store.episode_ends[self.episodes] - self.store.episode_starts[self.episodes]

    @property
    def meta(self) -> dict[str, np.ndarray]:
        """Per-episode metadata of the selected episodes."""
        return {k: v[self.episodes] for k, v in self.store.meta.items()}

    def __len__(self) -> int:
        return self.num_episodes

    def view(self, **filters: Any) -> "EpisodeView":
        """Narrow this view further with the same filters as `EpisodeStore.view`."""
        picked = select_episodes(self.meta, **filters)
        return EpisodeView(self.store, self.episodes[picked])

    def read(self, key: str) -> np.ndarray:
        """All frames of `key` in the selected episodes, concatenated in episode order."""
        starts = self.store.episode_starts[self.episodes]
        ends = self.store.episode_ends[self.episodes]
        return read_ranges(self.store.array(key), starts, ends)

    def stats(self, keys: Iterable[str]) -> dict[str, dict[str, np.ndarray]]:
        """Statistics over this view's frames only (not saved in the store)."""
        keys = [keys] if isinstance(keys, str) else list(keys)
        return {key: compute_stats(self.read(key)) for key in keys}

    def __repr__(self) -> str:
        return f"EpisodeView({self.num_episodes} of {self.store.num_episodes} episodes)"


def read_ranges(arr: Any, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Concatenate arr[start:end] over ranges, merging adjacent ones into one read each."""
    merged: list[list[int]] = []
    for s, e in zip(starts.tolist(), ends.tolist()):
        if merged and merged[-1][1] == s:
            merged[-1][1] = e
        else:
            merged.append([s, e])
    if not merged:
        return np.empty((0, *arr.shape[1:]), dtype=arr.dtype)
    return np.concatenate([arr[s:e] for s, e in merged])
