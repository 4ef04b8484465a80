"""More demonstrations for the same human-seconds: the control every HITL method must beat.

The operator spends the round's human time recording whole demonstrations (source
``teleop``: no policy runs; the operator drives every step) instead of correcting the
policy. A round, in order:
1. **Collect** whole demonstrations until the round's episodes or the operator's
   budget of human seconds is spent (a simulated operator demonstrates for it).
2. **Curate**: every successful episode of every round so far in which the operator
   drove every step (one cut short by the budget and finished by nobody is dropped),
   plus the base demos; windows drawn uniformly over all of it.
3. **Train**: the shared fine-tuning modes (:mod:`robot_learn.loops.finetune`).
4. **Evaluate** on held-out seeds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from robot_learn.data.views import EpisodeView
from robot_learn.loops.aggregation import human_steps_mask
from robot_learn.loops.round import LoopConfig, Method, Part


@dataclass
class MoreDemosConfig(LoopConfig):
    """``configs/loop/more_demos.yaml``."""

    method: str = "more_demos"
    sources: Any = field(default_factory=lambda: ["teleop"])


class MoreDemos(Method):
    """See the module docstring."""

    name = "more_demos"
    config_class = MoreDemosConfig

    def curate(self, r: int, collected: Any, policy: Any, round_dir: Path) -> dict[str, Part]:
        parts = {"base": Part(self.ctx.demos, self.ctx.demos.num_frames)}
        wins = self.so_far(collected, r).view(success=True)
        whole = [int(e) for e in wins.episodes if human_steps_mask(collected, int(e)).all()]
        if whole:
            view = EpisodeView(collected, whole)
            parts["demos"] = Part(view, view.num_frames)
        return parts
