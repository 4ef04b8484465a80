"""Building a round's training data: step selections, derived stores and mixed samplers.

- :func:`human_steps_mask` / :func:`runs`: which steps a human controlled (HG-DAgger
  aggregates only those, labelled with the human's actions).
- :func:`write_selection`: copy selected step runs of a store into another store, one
  episode per run, tagged with a source; training samples windows inside a run only,
  so a human segment never borrows the policy's actions at its edges.
- :class:`MixtureSampler`: fixed shares of each batch from several samplers
  (e.g. base : human : curated = 1 : 1 : 1).
- :class:`ConditionSampler`: adds a policy's conditioning inputs (RECAP's advantage
  indicator, success conditioning's return indicator: +1, -1, 0 dropped).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np


def human_steps_mask(store: Any, episode: int) -> np.ndarray:
    """Bool per step of ``episode``: a human was in control."""
    start, end = store.episode_range(episode)
    return store.read("intervention", start, end).astype(bool)


def runs(mask: np.ndarray, min_length: int = 1) -> list[tuple[int, int]]:
    """Maximal ``[start, end)`` runs of True in ``mask`` at least ``min_length`` long."""
    mask = np.asarray(mask, dtype=bool)
    edges = np.flatnonzero(np.diff(np.concatenate([[0], mask.astype(np.int8), [0]])))
    return [(int(s), int(e)) for s, e in zip(edges[::2], edges[1::2]) if e - s >= min_length]


def write_selection(out: Any, store: Any, selection: Mapping[int, Sequence[tuple[int, int]]], source: str,
                    keys: Sequence[str] | None = None) -> int:
    """Append each selected run ``{episode: [(start, end), ...]}`` of ``store`` to ``out``
    as its own episode (meta copied, ``source`` replaced); returns the number written."""
    keys = tuple(keys or store.keys)
    written = 0
    for episode, spans in selection.items():
        meta = store.episode(int(episode))["meta"] if spans else None
        base, _ = store.episode_range(int(episode))
        for start, end in spans:
            steps = {k: store.read(k, base + start, base + end) for k in keys}
            out.append_episode(steps, {**{k: v for k, v in meta.items() if k != "created"}, "source": source})
            written += 1
    return written


def _concat(parts: list[Any]) -> Any:
    first = parts[0]
    if isinstance(first, Mapping):
        return {k: _concat([p[k] for p in parts]) for k in first}
    if isinstance(first, list):
        return [x for p in parts for x in p]
    return np.concatenate(parts, axis=0)


class MixtureSampler:
    """Batches of ``batch_size`` windows with a fixed share from each sampler.

    ``weights`` set the shares (largest-remainder rounding); each sub-sampler must
    have been built with ``batch_size`` equal to its share (see :func:`split_batch`).
    """

    def __init__(self, samplers: Mapping[str, Any]) -> None:
        if not samplers:
            raise ValueError("MixtureSampler needs at least one sampler")
        self.samplers = dict(samplers)
        self.batch_size = sum(int(s.batch_size) for s in self.samplers.values())

    def sample(self) -> dict[str, Any]:
        parts = [s.sample() for s in self.samplers.values()]
        batch = _concat(parts)
        return batch

    def __len__(self) -> int:
        return sum(len(s) for s in self.samplers.values())

    def state_dict(self) -> dict[str, Any]:
        return {name: s.state_dict() for name, s in self.samplers.items()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for name, s in self.samplers.items():
            s.load_state_dict(state[name])


def split_batch(batch_size: int, weights: Mapping[str, float]) -> dict[str, int]:
    """Shares of ``batch_size`` proportional to ``weights`` (each >= 1, summing exactly)."""
    names = [n for n, w in weights.items() if w > 0]
    if not names:
        raise ValueError(f"all mixture weights are zero: {dict(weights)}")
    if batch_size < len(names):
        raise ValueError(f"batch_size {batch_size} is smaller than the {len(names)} mixture parts")
    w = np.array([weights[n] for n in names], dtype=np.float64)
    exact = (batch_size - len(names)) * w / w.sum()
    counts = np.floor(exact).astype(int) + 1
    for i in np.argsort(-(exact - np.floor(exact)))[: batch_size - counts.sum()]:
        counts[i] += 1
    return dict(zip(names, counts.tolist()))


class ConditionSampler:
    """Wraps a window sampler, adding a conditioning input ``obs[key]`` ``[B, To, 1]`` for
    each ``key`` of ``conditions``: +1 / -1 from the per-step labels
    ``{key: {store episode: bool [T]}}`` at each window's anchor step, 0 (unconditioned)
    for a key without labels and, with probability ``dropout``, for any window (RECAP
    and success conditioning train the unconditioned policy alongside)."""

    def __init__(self, sampler: Any, conditions: Sequence[str], labels: Mapping[str, Mapping[int, np.ndarray]],
                 dropout: float = 0.3, seed: int = 0) -> None:
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        unknown = sorted(set(labels) - set(conditions))
        if unknown:
            raise ValueError(f"labels for {unknown}, which are not conditions of the policy ({list(conditions)})")
        self.sampler, self.conditions, self.dropout = sampler, tuple(conditions), float(dropout)
        self.labels = {k: dict(v) for k, v in labels.items()}
        self.batch_size = sampler.batch_size
        self._rng = np.random.default_rng(seed)

    def sample(self) -> dict[str, Any]:
        batch = self.sampler.sample()
        horizon = next(iter(v for v in batch["obs"].values() if isinstance(v, np.ndarray))).shape[1]
        for key in self.conditions:
            labels = self.labels.get(key)
            value = np.zeros(len(batch["t"]), dtype=np.float32) if labels is None else np.array(
                [1.0 if labels[int(e)][int(t)] else -1.0 for e, t in zip(batch["episode"], batch["t"])],
                dtype=np.float32)
            value[self._rng.random(len(value)) < self.dropout] = 0.0
            batch["obs"][key] = np.repeat(value[:, None, None], horizon, axis=1)
        return batch

    def __len__(self) -> int:
        return len(self.sampler)

    def state_dict(self) -> dict[str, Any]:
        return {"inner": self.sampler.state_dict(), "rng": self._rng.bit_generator.state}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.sampler.load_state_dict(state["inner"])
        self._rng.bit_generator.state = state["rng"]
