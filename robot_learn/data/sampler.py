"""`WindowSampler`: random (obs_horizon, action_horizon) windows from a store or view.

A window anchored at step t of an episode of length L takes
    obs    steps t-To+1 .. t
    action steps t-To+1 .. t-To+Ta
with every index clamped to [0, L-1], so windows at the episode edges repeat the
first or last step (edge padding) and never cross into a neighbouring episode.
Every step of every selected episode is an anchor, drawn uniformly.

``spans`` narrows some episodes to step ranges ``[start, end)``: each range then acts as
an episode of its own (anchors only inside it, edge padding at its ends), while the
windows still name the episode and its step. The fleet trains on an operator's runs
within an episode this way (HG-DAgger), without copying them out.

Every batch has ``action_is_pad`` ``[B, Ta]``: True for the action steps that a span's
cut (a span start after the episode's first step, or a span end before its last) padded.
Those steps were not the operator's, so the policies leave them out of the loss; the
padding at an episode's own ends (holding the first or last action) stays a real label.
Without spans it is all False.
"""

from __future__ import annotations

import numbers
import warnings
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from robot_learn.data.block_pool import BlockPool, anchor_table, plan_blocks
from robot_learn.data.errors import StoreError
from robot_learn.data.store import EpisodeStore
from robot_learn.data.views import EpisodeView, read_ranges

DEFAULT_MAX_CACHE_BYTES = 8 << 30


class WindowSampler:
    """Vectorised window sampler (numpy fancy indexing, no per-sample Python loop).

    With `cache=True` (default) the needed arrays of the selected episodes are
    read and decompressed into memory once, if they take at most `max_cache_bytes`.
    If they take more, runs of whole episodes are held in memory a few at a time,
    within `max_cache_bytes`, and swapped in a shuffled cycle (`block_pool`: each
    block serves about `windows_per_frame` windows per frame while resident). With
    `cache=False` each batch reads only the frames it needs from zarr.

    `derived` adds per-frame arrays kept outside the store's schema (e.g. cached
    frame features, see `feature_cache`), one row per committed store frame; their
    names can then be used in `obs_keys` like store keys.

    `spans` maps store episode indices of the view to the step ranges used of them
    (see the module docstring; an empty list drops the episode); the other episodes are
    used whole. With spans the data must fit `max_cache_bytes` or be read from zarr
    (`cache=False`); the out-of-core pool is not used.

    `anchor_every` k > 1 draws only anchors at steps 0, k, 2k, ... of each segment: in a
    rollout of a policy that executes k-step chunks, the steps where it chose its chunk from
    the window's observations (as `spans`, it keeps the data off the out-of-core pool)."""

    def __init__(self, source: EpisodeStore | EpisodeView, obs_keys: Sequence[str] = ("state",),
                 action_key: str = "action", obs_horizon: int = 2, action_horizon: int = 16,
                 batch_size: int = 64, seed: int = 0, cache: bool = True,
                 max_cache_bytes: int = DEFAULT_MAX_CACHE_BYTES,
                 derived: Mapping[str, np.ndarray] | None = None,
                 windows_per_frame: float = 1.0,
                 spans: Mapping[int, Sequence[tuple[int, int]]] | None = None, anchor_every: int = 1) -> None:
        view = source.view() if isinstance(source, EpisodeStore) else source
        if not isinstance(view, EpisodeView):
            raise StoreError(f"WindowSampler needs an EpisodeStore or EpisodeView, "
                             f"got {type(source).__name__}")
        store = view.store
        if isinstance(max_cache_bytes, bool) or not isinstance(max_cache_bytes, (int, np.integer)) \
                or max_cache_bytes < 0:
            raise StoreError(f"max_cache_bytes must be an int >= 0, got {max_cache_bytes!r}")
        for name, value in (("obs_horizon", obs_horizon), ("action_horizon", action_horizon),
                            ("batch_size", batch_size)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise StoreError(f"{name} must be a positive int, got {value!r}")
        if isinstance(windows_per_frame, bool) or not isinstance(windows_per_frame, numbers.Real) \
                or not 0 < windows_per_frame < float("inf"):
            raise StoreError(f"windows_per_frame must be a finite number > 0, got {windows_per_frame!r}")
        if isinstance(anchor_every, bool) or not isinstance(anchor_every, (int, np.integer)) or anchor_every < 1:
            raise StoreError(f"anchor_every must be a positive int, got {anchor_every!r}")
        obs_keys = (obs_keys,) if isinstance(obs_keys, str) else tuple(obs_keys)
        derived = dict(derived or {})
        for key, values in derived.items():
            if len(values) != store.num_frames:
                raise StoreError(f"derived array {key!r} has {len(values)} rows; the store has "
                                 f"{store.num_frames} committed frames")
            bad = np.flatnonzero(~np.isfinite(values).reshape(len(values), -1).all(axis=1))
            if len(bad):
                raise StoreError(f"derived array {key!r} has a non-finite value at frame {int(bad[0])}")
        for key in (*obs_keys, action_key):
            if key not in store.keys and key not in derived:
                known = [*store.keys, *derived]
                raise StoreError(f"unknown key {key!r}; store keys: {', '.join(known) or '(none)'}")
        if view.num_episodes == 0:
            raise StoreError("cannot sample windows: the store or view has no episodes")
        self.view, self.store = view, store
        self.obs_keys, self.action_key = obs_keys, action_key
        self.obs_horizon, self.action_horizon = int(obs_horizon), int(action_horizon)
        self.batch_size = int(batch_size)
        self.seed = seed
        self._rng = np.random.default_rng(seed)

        episodes = view.episodes
        starts, ends = store.episode_starts[episodes], store.episode_ends[episodes]
        self._lengths = ends - starts
        self._episodes = episodes
        self._instructions = store.meta["instruction"][episodes]
        keys = tuple(dict.fromkeys((*obs_keys, action_key)))
        # Bytes of the selected frames of every array, derived ones too (both paths copy them).
        frames = int(self._lengths.sum())
        need = sum(frames * (int(np.prod(derived[k].shape[1:], dtype=np.int64)) * derived[k].dtype.itemsize
                             if k in derived else int(np.prod(store.schema[k]["shape"], dtype=np.int64))
                             * np.dtype(store.schema[k]["dtype"]).itemsize) for k in keys)
        self.cached = bool(cache) and need <= max_cache_bytes
        self.pool: BlockPool | None = None
        if cache and not self.cached and (spans or anchor_every > 1):
            warnings.warn(f"WindowSampler: {need / 2**20:.0f} MiB exceeds max_cache_bytes; with spans or anchor_every, "
                          "windows are read from zarr", stacklevel=2)
        elif cache and not self.cached:
            blocks, width, slots = plan_blocks(self._lengths, int(max_cache_bytes * frames // max(need, 1)))
            if slots >= 2:
                self.pool = BlockPool({k: derived[k] if k in derived else store.array(k) for k in keys},
                                      starts, ends, blocks, width, slots, self._rng, windows_per_frame)
                warnings.warn(f"WindowSampler: {need / 2**20:.0f} MiB exceeds max_cache_bytes; sampling "
                              f"from {slots} of {len(blocks)} blocks of episodes held in memory at a "
                              "time", stacklevel=2)
            else:
                warnings.warn(f"WindowSampler: {need / 2**20:.0f} MiB exceeds max_cache_bytes and "
                              "not two blocks of episodes fit in it; reading windows from zarr "
                              "instead", stacklevel=2)
        if self.cached:
            # Frames of the selected episodes laid end to end in memory.
            self._frame_starts = np.concatenate([[0], np.cumsum(self._lengths)[:-1]]).astype(np.int64)
            self._arrays: dict[str, Any] = {
                k: read_ranges(derived[k] if k in derived else store.array(k), starts, ends) for k in keys}
        else:
            self._frame_starts = starts.astype(np.int64)
            self._arrays = {k: derived[k] if k in derived else store.array(k) for k in keys}
        # Segments (whole episodes, or the spans of some): episode position, first step, length.
        self._seg_pos, self._seg_off, self._seg_len = segments(episodes, self._lengths, spans)
        if len(self._seg_pos) == 0:
            raise StoreError("cannot sample windows: the spans leave no step to sample")
        # Anchor table: segment and step t within it, for every step.
        self._anchor_pos, self._anchor_t = anchor_table(self._seg_len)
        if anchor_every > 1:
            chosen = self._anchor_t % anchor_every == 0
            self._anchor_pos, self._anchor_t = self._anchor_pos[chosen], self._anchor_t[chosen]
        # Which segments were cut from their episode at the start / at the end.
        self._cut_start = self._seg_off > 0
        self._cut_end = self._seg_off + self._seg_len < self._lengths[self._seg_pos]
        self._obs_offsets = np.arange(self.obs_horizon) - self.obs_horizon + 1
        self._act_offsets = np.arange(self.action_horizon) - self.obs_horizon + 1

    def __len__(self) -> int:
        """Number of anchors (windows) to draw from."""
        return len(self._anchor_t)

    def sample(self) -> dict[str, Any]:
        """One random batch of `batch_size` windows (anchors drawn with replacement)."""
        if self.pool is not None:
            pos, t = self.pool.draw(self._rng, self.batch_size)
            batch = self._gather(pos, t, self.pool.base, self.pool.buffers)
            self.pool.served_batch(self._rng, self.batch_size)
            return batch
        k = self._rng.integers(0, len(self._anchor_t), size=self.batch_size)
        return self._gather(self._anchor_pos[k], self._anchor_t[k])

    def __iter__(self) -> Iterator[dict[str, Any]]:
        while True:
            yield self.sample()

    def batch_at(self, episodes: Sequence[int], t: Sequence[int]) -> dict[str, Any]:
        """Windows anchored at given (store episode index, step) pairs; no randomness."""
        episodes = np.asarray(episodes, dtype=np.int64).ravel()
        t = np.asarray(t, dtype=np.int64).ravel()
        pos = np.searchsorted(self._episodes, episodes)
        pos = np.minimum(pos, len(self._episodes) - 1)
        if episodes.shape != t.shape or not np.array_equal(self._episodes[pos], episodes):
            raise StoreError(f"episodes {episodes.tolist()} are not all in this sampler's "
                             f"episodes (or do not pair up with t {t.tolist()})")
        if (t < 0).any() or (t >= self._lengths[pos]).any():
            raise StoreError(f"steps {t.tolist()} out of range for episode lengths "
                             f"{self._lengths[pos].tolist()}")
        # The segment holding each step: segments are sorted by (episode position, first step).
        width = int(self._lengths.max()) + 1
        seg = np.maximum(np.searchsorted(self._seg_pos * width + self._seg_off, pos * width + t, side="right") - 1, 0)
        inside = (self._seg_pos[seg] == pos) & (t >= self._seg_off[seg]) & (t < self._seg_off[seg] + self._seg_len[seg])
        if not inside.all():
            raise StoreError(f"steps {t[~inside].tolist()} of episodes {episodes[~inside].tolist()} are outside "
                             "this sampler's spans")
        return self._gather(seg, t - self._seg_off[seg])

    def _gather(self, pos: np.ndarray, t: np.ndarray, starts: np.ndarray | None = None,
                memory: Mapping[str, np.ndarray] | None = None) -> dict[str, Any]:
        """Windows at (segment, step in it) pairs; `starts`/`memory` index the block pool's
        buffers (whose positions are episodes: the pool runs without spans)."""
        last = (self._seg_len[pos] - 1)[:, None]
        base = ((self._frame_starts if starts is None else starts)[self._seg_pos[pos]] + self._seg_off[pos])[:, None]
        obs_idx = base + np.clip(t[:, None] + self._obs_offsets, 0, last)
        act_t = t[:, None] + self._act_offsets
        act_idx = base + np.clip(act_t, 0, last)
        is_pad = ((act_t < 0) & self._cut_start[pos][:, None]) | ((act_t > last) & self._cut_end[pos][:, None])
        obs: dict[str, Any] = {}
        for key in self.obs_keys:
            value = self._take(key, obs_idx, memory)
            if "/" in key:  # "images/front" -> obs["images"]["front"]
                group, name = key.split("/", 1)
                obs.setdefault(group, {})[name] = value
            else:
                obs[key] = value
        episode = self._seg_pos[pos]
        return {"obs": obs, "action": self._take(self.action_key, act_idx, memory), "action_is_pad": is_pad,
                "instruction": self._instructions[episode].tolist(),
                "episode": self._episodes[episode], "t": (t + self._seg_off[pos]).astype(np.int64)}

    def _take(self, key: str, idx: np.ndarray, memory: Mapping[str, np.ndarray] | None) -> np.ndarray:
        if memory is not None:
            return memory[key][idx]
        arr = self._arrays[key]
        if self.cached:
            return arr[idx]
        # Read each distinct frame once from zarr, then fan out in memory.
        uniq, inverse = np.unique(idx, return_inverse=True)
        rows = arr[uniq] if isinstance(arr, np.ndarray) else arr.oindex[uniq]
        return rows[inverse.reshape(idx.shape)]

    def state_dict(self) -> dict[str, Any]:
        """RNG state as a JSON-able dict of plain Python values (no pickle needed)."""
        state = {"bit_generator": self._rng.bit_generator.state, "seed": self.seed,
                 "num_windows": len(self)}
        if self.pool is not None:
            state["pool"] = self.pool.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore the RNG so the next batches equal those after `state_dict()`."""
        try:
            bit_state = state["bit_generator"]
            rng = np.random.default_rng()
            if bit_state.get("bit_generator") != type(rng.bit_generator).__name__:
                raise ValueError(f"bit generator {bit_state.get('bit_generator')!r}, "
                                 f"expected {type(rng.bit_generator).__name__!r}")
            rng.bit_generator.state = bit_state
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise StoreError(f"invalid sampler state_dict: {exc}") from exc
        if state.get("num_windows", len(self)) != len(self):
            warnings.warn(f"sampler state was saved with {state['num_windows']} windows, this "
                          f"sampler has {len(self)}; batches will differ from the original run",
                          stacklevel=2)
        if self.pool is not None:
            saved = state.get("pool")
            plan = saved.get("plan") if isinstance(saved, dict) else None
            if plan == self.pool.plan:
                self.pool.load_state_dict(saved)
            else:
                warnings.warn(f"sampler state was saved {'by a pool of ' + str(plan) if plan else 'without a pool'}"
                              f", this sampler's pool is {self.pool.plan}; it keeps its own blocks and "
                              "batches will differ from the original run", stacklevel=2)
        elif "pool" in state:
            warnings.warn("sampler state was saved by an out-of-core pool, this sampler holds its arrays "
                          "in memory; batches will differ from the original run", stacklevel=2)
        self._rng = rng


def segments(episodes: np.ndarray, lengths: np.ndarray, spans: Mapping[int, Sequence[tuple[int, int]]] | None
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Episode position, first step and length of every segment: each episode whole, or
    the sorted ``spans`` of it (store episode index -> ``[(start, end), ...]``)."""
    if not spans:
        n = len(episodes)
        return np.arange(n, dtype=np.int64), np.zeros(n, dtype=np.int64), lengths.astype(np.int64)
    where = {int(e): i for i, e in enumerate(episodes.tolist())}
    unknown = sorted(set(map(int, spans)) - set(where))
    if unknown:
        raise StoreError(f"spans name episodes {unknown[:5]} that are not in the view")
    pos, off, size = [], [], []
    for i, length in enumerate(lengths.tolist()):
        ranges = sorted(spans.get(int(episodes[i]), [(0, length)]))
        for start, end in ranges:
            if not 0 <= start < end <= length:
                raise StoreError(f"span ({start}, {end}) of episode {int(episodes[i])} is not a step range "
                                 f"within its {length} steps")
            pos.append(i), off.append(start), size.append(end - start)
    return np.array(pos, dtype=np.int64), np.array(off, dtype=np.int64), np.array(size, dtype=np.int64)
