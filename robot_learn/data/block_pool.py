"""``BlockPool``: out-of-core window sampling from whole runs of episodes held in memory.

When a store's needed arrays exceed the sampler's cache budget, reading each window's
frames straight from zarr decodes a whole chunk for every frame it uses. The pool reads
*blocks* instead (runs of consecutive episodes, so whole chunks, one contiguous read
per array) into a fixed number of memory slots, draws many windows from the resident
blocks, and swaps the oldest block for the next one of a shuffled cycle over all blocks
once the pool has served ``windows_per_frame`` windows per frame of a slot. Memory stays
within the budget, every block is loaded once per cycle, and every window is exact
(a block holds whole episodes, so edge padding works as in memory).

The pool's place (which block is in which slot, the load order and the rest of the
cycle) is a dict of plain ints, so a resumed sampler draws the batches of one never
stopped.
"""

from __future__ import annotations

import hashlib
from typing import Any, Mapping

import numpy as np

from robot_learn.data.errors import StoreError
from robot_learn.data.views import read_ranges

TARGET_SLOTS = 8


def anchor_table(lengths: np.ndarray, first: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Every (episode position, step) anchor of episodes of ``lengths``, positions from ``first``."""
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    return (np.repeat(np.arange(first, first + len(lengths)), lengths),
            np.arange(int(np.sum(lengths))) - np.repeat(offsets, lengths))


def plan_blocks(lengths: np.ndarray, budget_frames: int) -> tuple[list[tuple[int, int]], int, int]:
    """Episode-position ranges of the blocks, the slot width in frames and the slot count.

    Blocks are greedy runs of consecutive episodes of about ``budget_frames / 8`` frames;
    a slot holds the largest block. The count is 0 or 1 when fewer than two slots fit."""
    target = max(1, budget_frames // TARGET_SLOTS)
    blocks, first, frames = [], 0, 0
    for pos, n in enumerate(lengths.tolist()):
        frames += n
        if frames >= target:
            blocks.append((first, pos + 1))
            first, frames = pos + 1, 0
    if first < len(lengths):
        blocks.append((first, len(lengths)))
    width = max(int(lengths[a:b].sum()) for a, b in blocks)
    return blocks, width, min(len(blocks), budget_frames // width)


class BlockPool:
    """``arrays`` maps each key to a zarr array (or an in-memory array) indexed by store
    frame; ``starts``/``ends`` are the store frames of the sampler's episodes in order."""

    def __init__(self, arrays: Mapping[str, Any], starts: np.ndarray, ends: np.ndarray,
                 blocks: list[tuple[int, int]], width: int, num_slots: int,
                 rng: np.random.Generator, windows_per_frame: float = 1.0) -> None:
        self.arrays, self.starts, self.ends = arrays, starts, ends
        self.blocks, self.width, self.num_slots = blocks, width, num_slots
        self.windows_per_frame = float(windows_per_frame)
        self.buffers = {k: np.empty((num_slots * width, *a.shape[1:]), dtype=a.dtype)
                        for k, a in arrays.items()}
        self.lengths = ends - starts
        self.slot_block = [-1] * num_slots  # block in each slot
        self.fifo: list[int] = []           # slots, oldest load first
        self.queue: list[int] = []          # the rest of the current cycle over blocks
        self.served = 0                     # windows drawn since the last swap
        self.loads = 0                      # blocks read so far (for benchmarks)
        self.per_swap = max(1, int(self.windows_per_frame * width))
        # Identifies the block layout and swap rate; a saved place only fits the same plan.
        self.plan = (f"{num_slots} slots x {width} frames, {len(blocks)} blocks "
                     f"{hashlib.sha1(np.asarray(blocks, dtype=np.int64).tobytes()).hexdigest()[:12]}, "
                     f"{self.windows_per_frame:g} windows per frame")
        self.base = np.zeros(len(starts), dtype=np.int64)  # buffer row of each episode's frame 0
        for slot in range(num_slots):
            self._load(slot, self._next_block(rng))
            self.fifo.append(slot)
        self._index()

    def draw(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        """``n`` anchors (episode position, step), uniform over the resident frames."""
        k = rng.integers(0, len(self._anchor_pos), size=n)
        return self._anchor_pos[k], self._anchor_t[k]

    def served_batch(self, rng: np.random.Generator, n: int) -> None:
        """Count ``n`` windows handed out; swap blocks once a slot's worth is served."""
        if len(self.blocks) <= self.num_slots:
            return  # everything is resident
        self.served += n
        swapped = False
        while self.served >= self.per_swap:
            self.served -= self.per_swap
            slot = self.fifo.pop(0)
            self._load(slot, self._next_block(rng))
            self.fifo.append(slot)
            swapped = True
        if swapped:
            self._index()

    def state_dict(self) -> dict[str, Any]:
        return {"plan": self.plan, "slots": list(self.slot_block), "fifo": list(self.fifo),
                "queue": list(self.queue), "served": self.served}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore a place saved by a pool of the same plan (``plan`` must match; the
        caller decides what a different plan means)."""
        try:
            slots = [int(b) for b in state["slots"]]
            fifo, queue = [int(s) for s in state["fifo"]], [int(b) for b in state["queue"]]
            served = int(state["served"])
        except (KeyError, TypeError, ValueError) as exc:
            raise StoreError(f"invalid sampler pool state: {exc!r}") from exc
        blocks = range(len(self.blocks))
        problems = [
            (len(slots) != self.num_slots or len(set(slots)) != len(slots)
             or any(b not in blocks for b in slots), "slots", slots),
            (sorted(fifo) != list(range(self.num_slots)), "fifo", fifo),
            (len(set(queue)) != len(queue) or any(b not in blocks for b in queue), "queue", queue),
            (not 0 <= served < self.per_swap, "served", served),
        ]
        for bad, field, value in problems:
            if bad:
                raise StoreError(f"invalid sampler pool state: {field}={value} does not fit {self.plan}")
        for slot, block in enumerate(slots):
            if self.slot_block[slot] != block:
                self._load(slot, block)
        self.fifo, self.queue, self.served = fifo, queue, served
        self._index()

    def _next_block(self, rng: np.random.Generator) -> int:
        resident = set(self.slot_block)
        while True:
            if not self.queue:
                self.queue = rng.permutation(len(self.blocks)).tolist()
            block = self.queue.pop(0)
            if block not in resident:
                return block

    def _load(self, slot: int, block: int) -> None:
        first, last = self.blocks[block]
        starts, ends = self.starts[first:last], self.ends[first:last]
        row = slot * self.width
        for key, arr in self.arrays.items():
            data = read_ranges(arr, starts, ends)
            self.buffers[key][row:row + len(data)] = data
        self.slot_block[slot] = block
        self.loads += 1

    def _index(self) -> None:
        pos_parts, t_parts = [], []
        for slot, block in enumerate(self.slot_block):
            first, last = self.blocks[block]
            pos, t = anchor_table(self.lengths[first:last], first)
            self.base[first:last] = slot * self.width + np.flatnonzero(t == 0)
            pos_parts.append(pos)
            t_parts.append(t)
        self._anchor_pos = np.concatenate(pos_parts)
        self._anchor_t = np.concatenate(t_parts)
