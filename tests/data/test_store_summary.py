"""The inspect summary counts episodes per task and source, success, frames and size."""

from __future__ import annotations

from episode_builders import make_meta, make_steps
from robot_learn.data import EpisodeStore, summarize


def test_summary_counts_tasks_sources_success_and_frames(store_path):
    store = EpisodeStore.create(store_path)
    rows = [("stack", "demo", True), ("stack", "rollout", False), ("stack", "demo", True),
            ("unstack", "teleop", False)]
    for i, (task, source, ok) in enumerate(rows):
        store.append_episode(make_steps(10, i), make_meta(i, task=task, source=source, success=ok))
    text = summarize(EpisodeStore.open(store_path))
    assert "episodes 4   frames 40" in text
    assert f"disk {store.disk_size_bytes() / 1e6:.1f} MB" in text
    lines = text.splitlines()
    assert any(line.split()[:3] == ["stack", "3", "66.7%"] for line in lines)
    assert any(line.split()[:3] == ["unstack", "1", "0.0%"] for line in lines)
    assert any(line.split()[:2] == ["demo", "2"] for line in lines)
    assert any(line.split()[:2] == ["teleop", "1"] for line in lines)
    assert "images/front" in text
    assert store.summary() == summarize(store)


def test_summary_of_an_empty_store_says_zero_episodes(store_path):
    assert "episodes 0   frames 0" in summarize(EpisodeStore.create(store_path))
