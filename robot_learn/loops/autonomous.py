"""The self-imitation control: the policy's own successes, no operator.

A round, in order:
1. **Collect** the round's episodes from the configured sources (default:
   ``autonomous``, the policy alone).
2. **Curate**: every successful episode of every round so far (of at most
   ``success_max_steps`` steps), whole, plus the base demos; windows drawn uniformly over
   all of it.
3. **Train**: the shared fine-tuning modes (:mod:`robot_learn.loops.finetune`).
4. **Evaluate** on held-out seeds.

It spends no human time, so any HITL method has to beat it to be worth a person.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from robot_learn.loops.round import LoopConfig, Method, Part


@dataclass
class AutonomousConfig(LoopConfig):
    """``configs/loop/autonomous.yaml``."""

    method: str = "autonomous"
    sources: Any = field(default_factory=lambda: ["autonomous"])


class Autonomous(Method):
    """See the module docstring."""

    name = "autonomous"
    config_class = AutonomousConfig

    def curate(self, r: int, collected: Any, policy: Any, round_dir: Path) -> dict[str, Part]:
        parts = {"base": Part(self.ctx.demos, self.ctx.demos.num_frames)}
        wins = self.successes(collected, r)
        if wins.num_episodes:
            parts["successes"] = Part(wins, wins.num_frames)
        return parts
