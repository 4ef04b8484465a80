"""HELP-style curated rollouts (HELP + VLAC-CUT, arXiv 2607.09776): HG-DAgger's human
runs plus the autonomous steps a progress critic says moved the task forward.

A round, in order:
1. **Collect** the round's episodes from the configured sources (default: ``hitl``).
2. **Curate**:
   - the human-controlled runs of every round so far (as in HG-DAgger);
   - the autonomous steps of those episodes that a progress critic, fitted on the
     demos, labels progress or recovery (:func:`curated_runs`; idle and failure
     segments are dropped), in runs of at least ``min_curated_run`` steps;
   - the base demos; batches mix base : human : curated by ``mix``.
3. **Train**: the shared fine-tuning modes (:mod:`robot_learn.loops.finetune`).
4. **Evaluate** on held-out seeds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from robot_learn.loops.aggregation import human_steps_mask, runs, write_selection
from robot_learn.loops.round import LoopConfig, Method, Part


@dataclass
class HelpCuratedConfig(LoopConfig):
    """``configs/loop/help_curated.yaml``."""

    method: str = "help_curated"
    mix: dict[str, float] = field(default_factory=lambda: {"base": 1.0, "human": 1.0, "curated": 1.0})
    curate_window: int = 5
    curate_eps: float = 0.02
    critic_steps: int = 300
    min_human_run: int = 2
    min_curated_run: int = 4

    def __post_init__(self) -> None:
        super().__post_init__()
        self.mix = {str(k): float(v) for k, v in dict(self.mix).items()}
        bad = {k: v for k, v in self.mix.items() if k not in ("base", "human", "curated") or v < 0}
        if bad:
            raise ValueError(f"bad mix {bad}: keys are base, human, curated with weights >= 0")


def curated_runs(predicted_progress: np.ndarray, human: np.ndarray, window: int, eps: float,
                 min_length: int) -> list[tuple[int, int]]:
    """The autonomous runs to keep: steps labelled progress or recovery from the critic's
    progress curve, minus human-controlled steps, at least ``min_length`` long."""
    from robot_learn.critics import keep_mask, label_steps

    keep = keep_mask(label_steps(predicted_progress, window, eps))
    return runs(keep & ~np.asarray(human, dtype=bool), min_length=min_length)


class HelpCurated(Method):
    """See the module docstring."""

    name = "help_curated"
    config_class = HelpCuratedConfig

    def curate(self, r: int, collected: Any, policy: Any, round_dir: Path) -> dict[str, Part]:
        from robot_learn.critics import ProgressCritic

        cfg, out = self.cfg, self.derived_store(round_dir)
        episodes = [int(e) for e in self.so_far(collected, r).episodes]
        human = {e: human_steps_mask(collected, e) for e in episodes}
        write_selection(out, collected, {e: runs(human[e], cfg.min_human_run) for e in episodes}, "intervention",
                        self.ctx.demos.store.keys)
        critic = ProgressCritic([k for k in policy.training_obs_keys if not k.startswith("images/")])
        critic.fit(self.ctx.demos, steps=cfg.critic_steps, seed=r)
        kept = {e: curated_runs(critic.predict(critic.features(collected, e)), human[e], cfg.curate_window,
                                cfg.curate_eps, cfg.min_curated_run) for e in episodes}
        write_selection(out, collected, kept, "rollout", self.ctx.demos.store.keys)
        parts = {"base": Part(self.ctx.demos, cfg.mix.get("base", 1.0))}
        for name, source in (("human", "intervention"), ("curated", "rollout")):
            view = out.view(source=source) if out.num_episodes else None
            if view is not None and view.num_episodes:
                parts[name] = Part(view, cfg.mix.get(name, 1.0))
        return parts
