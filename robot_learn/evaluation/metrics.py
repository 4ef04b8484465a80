"""Success-rate statistics for evaluation rollouts."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence


def wilson_interval(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion ``k / n``.

    Unlike the normal approximation it stays inside [0, 1] and is sensible at
    k = 0 or k = n, which is common for small evaluation runs.

    center = (p + z^2/2n) / (1 + z^2/n)
    half   = z / (1 + z^2/n) * sqrt(p(1-p)/n + z^2/4n^2)
    """
    if n < 0 or k < 0 or k > n:
        raise ValueError(f"wilson_interval needs 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return 0.0, 1.0  # no evidence: the whole range
    p = k / n
    denom = 1.0 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    # Exact bounds at the extremes; avoids -1e-17 style float noise.
    low = 0.0 if k == 0 else max(0.0, center - half)
    high = 1.0 if k == n else min(1.0, center + half)
    return low, high


@dataclass(frozen=True)
class SuccessSummary:
    """Aggregate metrics over a set of episodes."""

    episodes: int
    successes: int
    success_rate: float
    ci_low: float
    ci_high: float
    mean_progress: float
    mean_length: float
    # best progress during an episode, averaged (Diffusion Policy's PushT score); None if not recorded
    mean_peak_progress: float | None = None

    def describe(self) -> str:
        """One line: success with its interval, mean final (and peak) progress."""
        peak = "" if self.mean_peak_progress is None else f" (peak {self.mean_peak_progress:.3f})"
        return (f"success {self.success_rate:.1%} ({self.successes}/{self.episodes}), "
                f"95% CI [{self.ci_low:.1%}, {self.ci_high:.1%}], mean progress {self.mean_progress:.3f}{peak}")


def summarize(successes: Sequence[bool], progress: Sequence[float],
              lengths: Sequence[int], z: float = 1.96,
              peak_progress: Sequence[float] | None = None) -> SuccessSummary:
    """Success rate with its Wilson interval, mean final (and peak) progress and mean length."""
    n = len(successes)
    if not (len(progress) == n and len(lengths) == n
            and (peak_progress is None or len(peak_progress) == n)):
        raise ValueError(
            f"summarize needs equal lengths, got successes={n}, progress={len(progress)}, "
            f"lengths={len(lengths)}, peak_progress={None if peak_progress is None else len(peak_progress)}")
    k = int(sum(bool(s) for s in successes))
    low, high = wilson_interval(k, n, z)
    return SuccessSummary(
        episodes=n,
        successes=k,
        success_rate=k / n if n else 0.0,
        ci_low=low,
        ci_high=high,
        mean_progress=float(sum(progress) / n) if n else 0.0,
        mean_length=float(sum(lengths) / n) if n else 0.0,
        mean_peak_progress=float(sum(peak_progress) / n) if n and peak_progress is not None else None,
    )
