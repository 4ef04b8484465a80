"""RECAP (π*0.6, arXiv 2511.14759): advantage-conditioned training on everything collected.

A round, in order:
1. **Collect** the round's episodes from the configured sources (default: ``hitl``).
2. **Curate**: nothing is dropped. A distributional value critic
   (:func:`robot_learn.critics.recap_labels`) is fitted on every episode collected so
   far; each step is labelled positive when its n-step advantage is above the
   task's ``percentile`` (human steps are always positive). Demo steps are positive.
   Windows are drawn uniformly over demos and collected episodes.
3. **Train**: the labels become the policy's conditioning input ``advantage``
   (:mod:`robot_learn.policies.conditioning`; +1 / -1, 0 for ``condition_dropout``
   of the windows), then the shared fine-tuning modes.
4. **Evaluate** on held-out seeds, the policy conditioned on +1 (its deployed value).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from robot_learn.loops.round import LoopConfig, Method, Part

ADVANTAGE_KEY = "advantage"


@dataclass
class RecapConfig(LoopConfig):
    """``configs/loop/recap.yaml``."""

    method: str = "recap"
    critic_steps: int = 300
    percentile: float = 30.0
    n_step: int = 10


class Recap(Method):
    """See the module docstring."""

    name = "recap"
    config_class = RecapConfig

    def curate(self, r: int, collected: Any, policy: Any, round_dir: Path) -> dict[str, Part]:
        from robot_learn.critics import recap_labels

        cfg, demos = self.cfg, self.ctx.demos
        so_far = self.so_far(collected, r)
        labels = recap_labels(so_far, obs_keys=[k for k in policy.training_obs_keys if not k.startswith("images/")],
                              percentile=cfg.percentile, n_step=cfg.n_step, max_length=self.ctx.max_steps,
                              critic_steps=cfg.critic_steps, seed=r)
        demo_labels = {int(e): np.ones(demos.store.episode_range(int(e))[1] - demos.store.episode_range(int(e))[0],
                                       dtype=bool) for e in demos.episodes}
        return {"base": Part(demos, demos.num_frames, {ADVANTAGE_KEY: demo_labels}),
                "collected": Part(so_far, so_far.num_frames,
                                  {ADVANTAGE_KEY: dict(zip(map(int, labels.episodes), labels.indicator))})}
