"""Fixtures for episode-store tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from episode_builders import make_meta, make_steps
from robot_learn.data import EpisodeStore


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "episodes.zarr"


@pytest.fixture
def small_store(store_path: Path) -> EpisodeStore:
    """Four episodes of lengths 5, 7, 3, 6 (state, action, ... and one 8x8 camera)."""
    store = EpisodeStore.create(store_path)
    for i, length in enumerate((5, 7, 3, 6)):
        store.append_episode(make_steps(length, seed=i), make_meta(i))
    return store
