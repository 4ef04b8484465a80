"""The shared round driver: collect -> curate -> train -> evaluate.

A method (one file each: :mod:`~robot_learn.loops.hgdagger`,
:mod:`~robot_learn.loops.help_curated`, :mod:`~robot_learn.loops.recap`,
:mod:`~robot_learn.loops.autonomous`) is a :class:`Method` subclass that supplies
its curate step, and may replace collect or train. :meth:`Method.run_round` calls
the four steps in order; it knows no method by name.

- **Collect** (:meth:`Method.collect`): the round's episodes from the configured
  ``sources`` (:mod:`~robot_learn.loops.sources`) into ``collected.zarr``.
- **Curate** (:meth:`Method.curate`, per method): the training data, as named
  :class:`Part` s (a view, its share of each batch, optional conditioning labels).
- **Train** (:meth:`Method.train`): the fine-tuning mode of the config
  (:mod:`~robot_learn.loops.finetune`): continue or retrain, success conditioning,
  RETAIN merging.
- **Evaluate** (:meth:`Method.evaluate`): held-out seeds; the round's numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar, Mapping

import numpy as np

from robot_learn.loops.aggregation import human_steps_mask, runs
from robot_learn.loops.sources import check_sources

TRAIN_MODES = ("continue", "retrain")
SUCCESS_STEPS_OF_DEMOS = "demos"


@dataclass
class LoopConfig:
    """Settings every method shares (``configs/loop/<method>.yaml``)."""

    method: str = ""
    episodes: int = 10                   # collected per round, over all sources
    collect_seed: int = 100_000          # round r uses collect_seed + 1000 r + i
    sources: Any = field(default_factory=lambda: ["hitl"])  # names, or {name: weight}
    source_weights: list[float] = field(default_factory=list)  # one per name (share of the episodes); none: equal
    train_mode: str = "continue"         # continue (from the current policy) | retrain (from scratch)
    train_steps: int = 500
    # the round's learning rate; None: a policy with a frame encoder continues at its
    # frame_pretraining.finetune_lr (1e-4), anything else (and every retrain) at train.lr
    train_lr: float | None = None
    merge_alpha: Any = None              # RETAIN: None, a number or {module prefix: alpha}
    return_threshold: float | None = None  # success conditioning on return >= threshold; None: off
    condition_dropout: float = 0.3       # share of windows trained unconditioned (label 0)
    widen_range: bool = True             # let the policy sample actions as far as its training data reach
    # own successes a round keeps (autonomous, world_model, guided): those of at most this many
    # steps; "demos": the longest base demo's; None: every success
    success_max_steps: Any = None
    eval_episodes: int = 20
    eval_seed: int = 1_000_000
    eval_workers: int = 1

    def __post_init__(self) -> None:
        from robot_learn.policies.merging import check_alpha

        self.sources = check_sources(self.sources, self.source_weights)
        if self.train_mode not in TRAIN_MODES:
            raise ValueError(f"unknown train_mode '{self.train_mode}'; valid: {', '.join(TRAIN_MODES)}")
        if self.merge_alpha is not None:
            self.merge_alpha = check_alpha(self.merge_alpha)
        if self.episodes < 1:
            raise ValueError(f"episodes must be >= 1, got {self.episodes}")
        if not (self.success_max_steps in (None, SUCCESS_STEPS_OF_DEMOS) or (
                isinstance(self.success_max_steps, int) and not isinstance(self.success_max_steps, bool)
                and self.success_max_steps >= 1)):
            raise ValueError(f"success_max_steps must be null, '{SUCCESS_STEPS_OF_DEMOS}' or a step count >= 1, "
                             f"got {self.success_max_steps!r}")
        if self.train_lr is not None and not float(self.train_lr) > 0:
            raise ValueError(f"train_lr must be > 0 (or null: the policy's own), got {self.train_lr}")


@dataclass
class LoopContext:
    """What the loop needs from its caller (the ``improve`` CLI or a benchmark)."""

    run_dir: Path
    task: str
    demos: Any                                  # EpisodeView of the base demonstrations
    make_robot: Callable[[], Any]               # -> a connected Robot with reset(seed)
    make_operator: Callable[[int], Any] | None  # round -> Operator (None: no operator)
    train_config: Any                           # TrainConfig template (out_dir is replaced)
    rate_hz: float = 10.0
    max_steps: int = 100
    base_policy_dir: Path | None = None         # what RETAIN merges towards (default: the round's start)
    expert_demos: Any = None                    # the expert's demos when ``demos`` derive from them
                                                # (loop=reversed: the easy task's); None: ``demos``
    conditions: Any = None                      # EnvConditions the rounds are evaluated under (start
                                                # spread, disturbances; None: the defaults); the
                                                # robots of ``make_robot`` should run under the same
    imagination: Any = None                     # loop=world_model's settings: where source
                                                # ``imagined`` rolls out (robot_learn.loops.world_model)
    reversal: Any = None                        # loop=reversed's settings: where source ``reversed``'s
                                                # easy-task expert puts the object down
    sampler_memory: Mapping[str, Any] = field(default_factory=dict)  # WindowSampler's max_cache_bytes and
                                                # windows_per_frame for each data part the rounds
                                                # train on (data.cache_gb; {}: the defaults)


@dataclass(frozen=True)
class DemoRecipe:
    """Which task's expert records the base demonstrations, whether its episodes go on
    past success until the expert is back at rest (episodes to be time-reversed), and
    (reverse tasks) where it puts the object down (``drop_spot``: beside | anywhere)."""

    task: str
    to_rest: bool = False
    drop_spot: str = "beside"


@dataclass
class Part:
    """One named part of the training data: a view, its batch weight, per-step
    conditioning labels ``{condition key: {store episode: bool [T]}}``, and which window
    anchors it is drawn at (``WindowSampler``'s ``anchor_every``)."""

    view: Any
    weight: float
    labels: dict[str, dict[int, np.ndarray]] = field(default_factory=dict)
    anchor_every: int = 1


class Method:
    """One improvement method's round; subclasses set ``name``, ``config_class`` and
    implement :meth:`curate`."""

    name: ClassVar[str] = ""
    config_class: ClassVar[type[LoopConfig]] = LoopConfig

    def __init__(self, ctx: LoopContext, cfg: LoopConfig) -> None:
        self.ctx, self.cfg = ctx, cfg

    # ----- 0. the base data (before the rounds; the caller trains the base policy on it) -----
    @classmethod
    def demo_recipe(cls, cfg: LoopConfig, task: str) -> DemoRecipe:
        """Whose expert records the base demos: the task's own."""
        return DemoRecipe(task)

    @classmethod
    def base_data(cls, cfg: LoopConfig, task: str, expert_demos: Any, run_dir: Path) -> Any:
        """The base policy's training data (a view) from the recipe's demos: those demos."""
        return expert_demos

    def round_plan(self) -> str:
        """One line: what a round does."""
        c = self.cfg
        return (f"collect {c.episodes} -> curate ({c.method}) -> {c.train_mode} {c.train_steps} steps -> "
                f"evaluate {c.eval_episodes}")

    def run_round(self, r: int, policy_dir: Path) -> tuple[Path, dict[str, Any]]:
        """Round ``r`` from the policy at ``policy_dir``: returns the new policy's directory
        and the round's numbers (see :mod:`robot_learn.loops.rounds`)."""
        from robot_learn.policies import load_policy

        round_dir = self.ctx.run_dir / f"round_{r:02d}"
        round_dir.mkdir(parents=True, exist_ok=True)
        policy = load_policy(policy_dir)
        collected = self.collect(r, policy, str(policy_dir))
        parts = self.curate(r, collected, policy, round_dir)
        new_dir, frames = self.train(r, policy_dir, parts, round_dir)
        numbers = self.evaluate(r, new_dir, collected, frames)
        return new_dir, {**numbers, "train_episodes": {n: int(p.view.num_episodes) for n, p in parts.items()}}

    # ----- 1. collect ------------------------------------------------------------------
    def collect(self, r: int, policy: Any, policy_id: str) -> Any:
        """The round's episodes from the configured sources; returns the collected store."""
        from robot_learn.data import EpisodeStore
        from robot_learn.loops.sources import collect_from_sources

        collected = EpisodeStore.open_or_create(self.ctx.run_dir / "collected.zarr")
        collect_from_sources(self.ctx, self.cfg.sources, self.cfg.episodes, self.cfg.collect_seed + 1000 * r, r,
                             policy, policy_id, collected)
        return collected

    # ----- 2. curate -------------------------------------------------------------------
    def curate(self, r: int, collected: Any, policy: Any, round_dir: Path) -> dict[str, Part]:
        """The training data of round ``r`` (every method says what it keeps)."""
        raise NotImplementedError

    def so_far(self, collected: Any, r: int) -> Any:
        """Everything collected for this task in rounds 1..r."""
        return collected.view(round=list(range(1, r + 1)), task=self.ctx.task)

    def successes(self, collected: Any, r: int, **filters: Any) -> Any:
        """Rounds 1..r's successful episodes (``filters`` narrow them further) of at most
        ``success_max_steps`` steps. On one pixel policy (docs/benchmarks.md) a round on all its
        successes cost 19 points against the demos alone, on those no longer than the longest
        demo 6: the long ones were most of the harm."""
        from robot_learn.data import EpisodeView

        wins = self.so_far(collected, r).view(success=True, **filters)
        limit = self.cfg.success_max_steps
        if limit == SUCCESS_STEPS_OF_DEMOS:
            limit = int(self.ctx.demos.lengths.max())
        return wins if limit is None else EpisodeView(wins.store, wins.episodes[wins.lengths <= limit])

    def derived_store(self, round_dir: Path, name: str = "train.zarr") -> Any:
        """A fresh store ``round_dir/name`` (default: this round's selected segments; derived data: rebuilt)."""
        import shutil

        from robot_learn.data import EpisodeStore

        path = round_dir / name
        if path.exists():
            shutil.rmtree(path)
        return EpisodeStore.open_or_create(path)

    # ----- 3. train --------------------------------------------------------------------
    def train(self, r: int, policy_dir: Path, parts: Mapping[str, Part], round_dir: Path
              ) -> tuple[Path, dict[str, int]]:
        """The config's fine-tuning mode; returns the new policy dir and frames per part."""
        from robot_learn.loops.finetune import finetune

        return finetune(self.ctx, self.cfg, r, policy_dir, parts, round_dir)

    # ----- 4. evaluate -----------------------------------------------------------------
    def evaluate(self, r: int, policy_dir: Path, collected: Any, frames: dict[str, int]) -> dict[str, Any]:
        """Success on held-out seeds (conditioned policies run at their deployed values)."""
        from robot_learn.evaluation import evaluate
        from robot_learn.policies import load_policy

        result = evaluate(load_policy(policy_dir), self.ctx.task, episodes=self.cfg.eval_episodes,
                          seed=self.cfg.eval_seed, workers=self.cfg.eval_workers, videos=0,
                          max_steps=self.ctx.max_steps, vectorization="sync", conditions=self.ctx.conditions)
        return round_numbers(collected, r, self.ctx.rate_hz, result.summary, frames)


def round_numbers(collected: Any, r: int, rate_hz: float, summary: Any, data: dict[str, int]) -> dict[str, Any]:
    """The round report's numbers, computed from the store (so a resumed round counts everything)."""
    view = collected.view(round=r)
    episodes = view.episodes
    interventions = []
    human_steps = steps = 0
    for e in episodes:
        mask = human_steps_mask(collected, int(e))
        interventions.append(len(runs(mask)))
        human_steps += int(mask.sum())
        steps += len(mask)
    successes = int(collected.meta["success"][episodes].sum()) if len(episodes) else 0
    robot_hours = steps / rate_hz / 3600.0
    sources = collected.meta["source"][episodes]
    return {
        "round": r,
        "success_rate": summary.success_rate, "ci_low": summary.ci_low, "ci_high": summary.ci_high,
        "eval_episodes": summary.episodes, "eval_successes": summary.successes,
        "collected_episodes": int(len(episodes)), "collected_successes": successes,
        "successes_per_hour": successes / robot_hours if robot_hours else 0.0,
        "interventions_per_episode": float(np.mean(interventions)) if interventions else 0.0,
        "human_seconds": human_steps / rate_hz,
        "data_added": {str(s): int((sources == s).sum()) for s in np.unique(sources)},
        "train_frames": data,
    }
