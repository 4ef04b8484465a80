"""Plots for evaluation reports."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import matplotlib

matplotlib.use("Agg")  # headless: reports are written on servers and in CI
import matplotlib.pyplot as plt  # noqa: E402

from robot_learn.evaluation.metrics import SuccessSummary  # noqa: E402


def plot_success_per_task(tasks: Sequence[str], summaries: Sequence[SuccessSummary],
                          path: str | Path, title: str = "Success rate per task") -> Path:
    """Bar chart of success rate per task with 95% Wilson error bars."""
    if len(tasks) != len(summaries) or not tasks:
        raise ValueError(f"need one summary per task, got {len(tasks)} tasks "
                         f"and {len(summaries)} summaries")
    rates = [s.success_rate for s in summaries]
    # Asymmetric error bars: distance from the rate to each Wilson bound.
    lower = [max(0.0, s.success_rate - s.ci_low) for s in summaries]
    upper = [max(0.0, s.ci_high - s.success_rate) for s in summaries]
    fig, ax = plt.subplots(figsize=(max(3.5, 1.2 * len(tasks) + 1.5), 3.5))
    x = range(len(tasks))
    ax.bar(x, rates, color="tab:blue", alpha=0.8)
    ax.errorbar(x, rates, yerr=[lower, upper], fmt="none", ecolor="black", capsize=4)
    for i, s in enumerate(summaries):
        ax.text(i, min(s.ci_high, 1.0) + 0.02, f"{s.successes}/{s.episodes}",
                ha="center", va="bottom", fontsize=8)
    ax.set_xticks(list(x))
    ax.set_xticklabels(tasks, rotation=20 if len(tasks) > 3 else 0)
    ax.set_ylim(0.0, 1.12)
    ax.set_ylabel("success rate (95% Wilson CI)")
    ax.set_title(title)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
