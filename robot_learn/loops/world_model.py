"""Improvement inside a learned world model (VLAW-style): imagined rollouts, success-filtered.

A round, in order:
1. **Collect** the round's episodes from the source ``imagined``: the current policy
   rolls out in the world model at ``world_model``, from the first frames of the stored
   episodes at ``starts`` (default: the store the world model was trained on), or with
   ``start: sim`` from fresh MuJoCo resets of the task with the rollout seeds. The
   ``scorer`` (``nearest``, or a success-model directory) labels each imagined episode a
   success or not, and it is recorded with ``source=synthetic``. The source mixes with
   the others (``sources=[imagined, autonomous]``: imagined and simulated rollouts) when
   the stores' keys agree.
2. **Curate**: the base demos plus every episode judged a success so far (of at most
   ``success_max_steps`` steps), whole (as ``autonomous`` keeps the simulator's successes).
3. **Train**: the shared fine-tuning modes (:mod:`robot_learn.loops.finetune`).
4. **Evaluate** in the simulator on held-out seeds: success there is the measure, not
   the world model's judgement.

Against ``loop=autonomous`` (the same episodes rolled out in the simulator) and the
base policy, this is the comparison that says whether imagined data helps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from robot_learn.loops.autonomous import Autonomous
from robot_learn.loops.round import LoopConfig, LoopContext
from robot_learn.loops.sources import register_source

IMAGINED = "imagined"


@dataclass
class WorldModelLoopConfig(LoopConfig):
    """``configs/loop/world_model.yaml``."""

    method: str = "world_model"
    sources: Any = field(default_factory=lambda: [IMAGINED])
    world_model: str = ""        # a world-model dir or `wm train` run dir (required)
    starts: str | None = None    # stored episodes whose first frames start rollouts; None: the model's store
    scorer: str = "nearest"      # nearest | a success-model dir (`wm train` writes <run>/success_model)
    start: str = "store"         # store: from the stored episodes at `starts`; sim: from fresh MuJoCo resets

    def __post_init__(self) -> None:
        super().__post_init__()
        from robot_learn.world_models.env import check_start
        from robot_learn.world_models.rollout import rollout_starts

        check_start(self.start, "loop.start")
        if not self.world_model:
            raise ValueError("loop.world_model is required: a world-model dir or `robot-learn wm train` run dir")
        if not Path(self.world_model).exists():
            raise ValueError(f"loop.world_model '{self.world_model}' does not exist")
        self.starts = rollout_starts(self.world_model, self.starts, self.scorer, keys=("loop.starts", "loop.scorer"))


class WorldModelLoop(Autonomous):
    """See the module docstring: collect imagines, curate keeps the judged successes."""

    name = "world_model"
    config_class = WorldModelLoopConfig

    def __init__(self, ctx: LoopContext, cfg: WorldModelLoopConfig) -> None:
        super().__init__(ctx, cfg)
        ctx.imagination = cfg  # what source `imagined` rolls out in


def imagine(ctx: Any, r: int, policy: Any, policy_id: str, store: Any, episodes: int, seed: int) -> None:
    """Source ``imagined``: round ``r``'s ``episodes`` rollouts of ``policy`` in the world model
    of ``ctx.imagination`` into ``store``, resuming after the round's imagined episodes
    already there (seeds ``seed, seed+1, ...``)."""
    from robot_learn.world_models import load_world_model
    from robot_learn.world_models.rollout import check_policy_fits, generate_rollouts, rollout_env, task_spaces

    settings = getattr(ctx, "imagination", None)
    if settings is None:
        raise ValueError(f"source '{IMAGINED}' needs a world model: use loop=world_model loop.world_model=<dir>")
    model = load_world_model(settings.world_model, task=ctx.task)
    check_policy_fits(policy, model, int(task_spaces(model.config.task)[0].shape[0]))
    done: list[int] = []
    if store.num_episodes:
        meta = store.meta
        mine = (meta["round"] == r) & (meta["source"] == "synthetic")
        done = [int(s) for s in meta["seed"][mine]]
    first = max(done) + 1 if done else seed
    left = episodes - len(done)
    if left <= 0:
        return
    with rollout_env(model, settings.starts, ctx.max_steps, settings.scorer, settings.start) as env:
        summary = generate_rollouts(policy, env, left, store, seed=first, policy_id=policy_id, round_index=r)
    for line in summary.stopped:
        print(f"round {r}: imagined rollout stopped, not written: {line}")
    print(f"round {r}: {summary.written} imagined rollouts, {summary.successes} judged successful "
          f"({summary.successes / max(summary.written, 1):.0%})")


register_source(IMAGINED, imagine)
