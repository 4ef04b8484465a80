"""Result records of an evaluation run."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from robot_learn.evaluation.metrics import SuccessSummary, summarize


@dataclass(frozen=True)
class EpisodeResult:
    """One evaluation episode: its seed and outcome."""

    seed: int
    success: bool
    progress: float  # final info["progress"]
    length: int      # environment steps taken
    video: str | None = None  # path of its mp4, if one was written
    disturbances: dict[str, int] = field(default_factory=dict)  # kind -> times it happened (envs.disturbances)
    diverged: bool = False  # the simulation blew up (info["diverged"]): ended as a failure
    peak_progress: float | None = None  # best info["progress"] during the episode


def summarize_episodes(episodes: list[EpisodeResult]) -> SuccessSummary:
    """:func:`summarize` over episodes; peak progress only when every episode recorded it."""
    peaks = [e.peak_progress for e in episodes]
    return summarize([e.success for e in episodes], [e.progress for e in episodes],
                     [e.length for e in episodes],
                     peak_progress=None if None in peaks else peaks)


@dataclass
class EvalResult:
    """All episodes of one task, with aggregate metrics."""

    task: str
    episodes: list[EpisodeResult]
    wall_time_s: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)  # free-form: policy, workers, ...

    @property
    def summary(self) -> SuccessSummary:
        """Success rate with its 95% Wilson interval, mean progress and length."""
        return summarize_episodes(self.episodes)

    @property
    def success_rate(self) -> float:
        """Fraction of successful episodes."""
        return self.summary.success_rate

    def disturbance_counts(self) -> dict[str, dict[str, int]]:
        """Per disturbance kind: the episodes it happened in, and how many of them succeeded."""
        counts: dict[str, dict[str, int]] = {}
        for e in self.episodes:
            for kind, times in e.disturbances.items():
                c = counts.setdefault(kind, {"episodes": 0, "successes": 0})
                if times:
                    c["episodes"] += 1
                    c["successes"] += int(e.success)
        return counts

    @property
    def diverged_episodes(self) -> int:
        """Episodes ended by a diverged simulation (failures, counted in the success rate)."""
        return sum(e.diverged for e in self.episodes)

    @property
    def seeds(self) -> list[int]:
        """Seeds of the episodes, in order."""
        return [e.seed for e in self.episodes]

    @property
    def videos(self) -> list[str]:
        """Paths of the videos written for this task."""
        return [e.video for e in self.episodes if e.video]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict: summary metrics plus every episode."""
        return {
            "task": self.task,
            **asdict(self.summary),
            "wall_time_s": self.wall_time_s,
            "info": dict(self.info),
            **({"disturbances": self.disturbance_counts()} if any(e.disturbances for e in self.episodes) else {}),
            **({"diverged_episodes": self.diverged_episodes} if self.diverged_episodes else {}),
            "per_episode": [asdict(e) for e in self.episodes],
        }
