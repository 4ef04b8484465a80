"""HG-DAgger (Kelly et al. 2019): aggregate what the human did when they took over.

A round, in order:
1. **Collect** the round's episodes from the configured sources (default: ``hitl``,
   the policy under the operator, who takes over and hands back).
2. **Curate**: every human-controlled run of every round so far (at least 2 steps),
   labelled with the human's actions, copied to the round's ``train.zarr``; plus the
   base demos. D = D_base U D_human, windows drawn uniformly over all of it.
3. **Train**: the shared fine-tuning modes (:mod:`robot_learn.loops.finetune`).
4. **Evaluate** on held-out seeds.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robot_learn.loops.aggregation import human_steps_mask, runs, write_selection
from robot_learn.loops.round import LoopConfig, Method, Part


@dataclass
class HGDaggerConfig(LoopConfig):
    """``configs/loop/hgdagger.yaml``."""

    method: str = "hgdagger"
    min_human_run: int = 2   # shorter takeovers carry no trainable window


class HGDagger(Method):
    """See the module docstring."""

    name = "hgdagger"
    config_class = HGDaggerConfig

    def curate(self, r: int, collected: Any, policy: Any, round_dir: Path) -> dict[str, Part]:
        out = self.derived_store(round_dir)
        human = {int(e): runs(human_steps_mask(collected, int(e)), min_length=self.cfg.min_human_run)
                 for e in self.so_far(collected, r).episodes}
        write_selection(out, collected, human, "intervention", self.ctx.demos.store.keys)
        parts = {"base": Part(self.ctx.demos, self.ctx.demos.num_frames)}
        if out.num_episodes:
            view = out.view()
            parts["human"] = Part(view, view.num_frames)
        return parts
