"""Views select episodes by source, round, success and task."""

from __future__ import annotations

import numpy as np
import pytest

from episode_builders import make_meta, make_steps
from robot_learn.data import EpisodeStore

ROWS = [  # (task, source, round, success)
    ("stack", "demo", 0, True), ("stack", "rollout", 1, False), ("unstack", "demo", 0, True),
    ("unstack", "intervention", 1, True), ("stack", "rollout", 2, True), ("peg_insert", "demo", 0, False),
]


@pytest.fixture(scope="module")
def mixed_store(tmp_path_factory):
    """Read-only in these tests, so built once per module."""
    store = EpisodeStore.create(tmp_path_factory.mktemp("views") / "mixed.zarr")
    for i, (task, source, rnd, ok) in enumerate(ROWS):
        store.append_episode(make_steps(3 + i, i), make_meta(i, task=task, source=source,
                                                              round=rnd, success=ok))
    return store


@pytest.mark.parametrize("filters, expected", [
    ({}, [0, 1, 2, 3, 4, 5]),
    ({"source": "demo"}, [0, 2, 5]),
    ({"source": ["rollout", "intervention"]}, [1, 3, 4]),
    ({"round": 1}, [1, 3]),
    ({"round": [0, 2]}, [0, 2, 4, 5]),
    ({"success": True}, [0, 2, 3, 4]),
    ({"success": False}, [1, 5]),
    ({"task": "unstack"}, [2, 3]),
    ({"task": ("stack", "peg_insert"), "success": True}, [0, 4]),
    ({"source": "demo", "round": 0, "task": "stack"}, [0]),
    ({"source": "teleop"}, []),
])
def test_view_selects_episodes_matching_every_filter(mixed_store, filters, expected):
    view = mixed_store.view(**filters)
    assert view.episodes.tolist() == expected
    assert view.store is mixed_store
    assert view.num_frames == sum(3 + i for i in expected)


def test_view_meta_and_frames_follow_the_selection(mixed_store):
    view = mixed_store.view(source="rollout")
    assert view.meta["round"].tolist() == [1, 2]
    want = np.concatenate([make_steps(3 + i, i)["state"] for i in (1, 4)])
    np.testing.assert_array_equal(view.read("state"), want)


def test_views_narrow_further(mixed_store):
    assert mixed_store.view(task="stack").view(success=True).episodes.tolist() == [0, 4]
