"""The fleet's single writer: one Ray actor owns the episode store and appends whole episodes.

Robot actors record an episode in memory and send it in one message when it ends
(:class:`RemoteStore`, the store a :class:`~robot_learn.loops.HITLSession` commits to).
An actor that dies mid-episode has sent nothing, so the store never holds part of an
episode; the writer's appends are the store's own atomic ones.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping


class EpisodeWriter:
    """Holds the store at ``path`` open for appending (its single-writer lock) for the fleet."""

    def __init__(self, path: str | Path) -> None:
        from robot_learn.data import EpisodeStore

        self.store = EpisodeStore.open_or_create(path)

    def keys(self) -> tuple[str, ...]:
        return self.store.keys

    def append(self, steps: Mapping[str, Any], meta: Mapping[str, Any]) -> int:
        """Append one whole episode; returns its index."""
        return self.store.append_episode(steps, meta)

    def num_episodes(self) -> int:
        return self.store.num_episodes

    def close(self) -> None:
        self.store.close()


class RemoteStore:
    """What a HITL session needs of a store, its episodes committed through ``writer``
    (a Ray handle to an :class:`EpisodeWriter`)."""

    def __init__(self, writer: Any) -> None:
        import ray

        self.writer = writer
        self.path = "the fleet's episode writer"
        self._keys = tuple(ray.get(writer.keys.remote()))

    @property
    def keys(self) -> tuple[str, ...]:
        return self._keys

    def append_episode(self, steps: Mapping[str, Any], meta: Mapping[str, Any]) -> int:
        import ray

        index = int(ray.get(self.writer.append.remote(dict(steps), dict(meta))))
        if not self._keys:  # the first episode fixed the store's schema
            self._keys = tuple(ray.get(self.writer.keys.remote()))
        return index
