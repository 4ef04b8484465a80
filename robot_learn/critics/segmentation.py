"""Segmenting a rollout by its progress curve (HELP, METHODS.md section 4, CPU version).

Each step gets one label from the change of progress over a window of ``window``
steps: ``PROGRESS`` (rose by more than ``eps``), ``IDLE`` (changed by at most
``eps``), ``FAILURE`` (fell by more than ``eps``) or ``RECOVERY`` (rising again
after a fall, until progress is back at its earlier best). Curation keeps the
progress and recovery steps.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

PROGRESS, IDLE, FAILURE, RECOVERY = 0, 1, 2, 3
LABEL_NAMES = ("progress", "idle", "failure", "recovery")
KEEP_LABELS = (PROGRESS, RECOVERY)


@dataclass(frozen=True)
class Segment:
    """Steps ``[start, end)`` of one episode that share a label."""

    label: int
    start: int
    end: int

    @property
    def name(self) -> str:
        return LABEL_NAMES[self.label]


def label_steps(progress: np.ndarray, window: int = 5, eps: float = 0.02) -> np.ndarray:
    """Per-step labels (ints, see the module docstring) of a progress curve ``[T]``."""
    p = np.asarray(progress, dtype=np.float64)
    if p.ndim != 1:
        raise ValueError(f"progress must be a 1-D curve, got shape {p.shape}")
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    # Forward difference over the window: what the next steps achieve.
    ahead = p[np.minimum(np.arange(len(p)) + window, len(p) - 1)]
    delta = ahead - p
    labels = np.where(delta > eps, PROGRESS, np.where(delta < -eps, FAILURE, IDLE))
    best, target = -np.inf, None  # target: the best progress before the latest fall
    for t in range(len(p)):
        best = max(best, p[t])
        if labels[t] == FAILURE:
            target = best if target is None else target
        elif labels[t] == PROGRESS and target is not None:
            if p[t] < target - eps:
                labels[t] = RECOVERY
            else:
                target = None  # back where it was: ordinary progress again
    return labels.astype(np.int64)


def segments(labels: np.ndarray) -> list[Segment]:
    """Runs of equal labels as :class:`Segment` s, in time order."""
    labels = np.asarray(labels)
    out, start = [], 0
    for t in range(1, len(labels) + 1):
        if t == len(labels) or labels[t] != labels[start]:
            out.append(Segment(int(labels[start]), start, t))
            start = t
    return out


def keep_mask(labels: np.ndarray) -> np.ndarray:
    """Steps curation keeps: progress and recovery."""
    return np.isin(np.asarray(labels), KEEP_LABELS)
