"""A text summary of an episode store, for `robot-learn inspect PATH`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from robot_learn.data.store import EpisodeStore


def summarize(store: "EpisodeStore") -> str:
    """Episodes per task (with success rate), per source and per round, frames,
    keys with dtypes and shapes, and the size on disk in MB."""
    meta = store.meta
    lines = [f"episode store {store.path}",
             f"  episodes {store.num_episodes}   frames {store.num_frames}   "
             f"disk {store.disk_size_bytes() / 1e6:.1f} MB"]
    if store.keys:
        lines.append("  keys:")
        width = max(len(k) for k in store.keys)
        for key, spec in sorted(store.schema.items()):
            lines.append(f"    {key:<{width}}  {spec['dtype']:<7} {tuple(spec['shape'])}")
    if store.num_episodes == 0:
        return "\n".join(lines)
    lengths = store.episode_ends - store.episode_starts
    lines.append(f"  episode length: min {lengths.min()}  mean {lengths.mean():.1f}  max {lengths.max()}")
    lines.append("  per task:          episodes  success")
    for task in np.unique(meta["task"]):
        sel = meta["task"] == task
        ok, n = int(meta["success"][sel].sum()), int(sel.sum())
        lines.append(f"    {task:<16} {n:>8}  {ok / n:6.1%} ({ok}/{n})")
    lines.append("  per source:        episodes  success")
    for source in np.unique(meta["source"]):
        sel = meta["source"] == source
        ok, n = int(meta["success"][sel].sum()), int(sel.sum())
        lines.append(f"    {source:<16} {n:>8}  {ok / n:6.1%} ({ok}/{n})")
    rounds = np.unique(meta["round"])
    lines.append("  per round: " + ", ".join(
        f"{r}: {int((meta['round'] == r).sum())}" for r in rounds))
    return "\n".join(lines)
