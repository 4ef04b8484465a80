"""Guided recovery (ReGuide): keep the successes of phase-guided rollouts and learn from them.

Before round 1, once: the base policy's own rollouts (``guide_rollouts`` of them,
successes and failures) and the demos train the latent dynamics model, and the demos
give the phase prototypes (:mod:`robot_learn.training.phase_guide`); the guide is kept in
``<run dir>/guide`` and serves every round (it depends on the task and the encoder, not on
the policy's weights).

A round, in order:
1. **Collect** the round's episodes from the configured sources (default: ``guided``, the
   current policy sampled with phase-conditioned guidance, recorded as ``source=guided``).
   ``sources=[autonomous]`` is the matched-data control: unguided rollouts, kept the same way.
2. **Curate**: the successful episodes of every round so far that no human touched (guided
   or autonomous), whole, plus the base demos:
   - ``mode=ft``: fine-tune the current policy, demos down-weighted to ``expert_weight`` of
     a batch against the successes' 1;
   - ``mode=fs``: retrain from scratch on demos plus successes, windows drawn uniformly.
3. **Train**: the shared fine-tuning (:mod:`robot_learn.loops.finetune`; ``ft`` continues,
   ``fs`` retrains).
4. **Evaluate** the new policy, unguided, on held-out seeds.

Iterating rounds iterates either mode; ``mode`` may change between runs that resume the
same run dir, which composes them (e.g. FS then FT).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from robot_learn.loops.round import LoopConfig, Method, Part
from robot_learn.loops.sources import register_source, run_session

MODES = {"ft": "continue", "fs": "retrain"}
GUIDE_DIR, PCG_FILE, SESSIONS_STORE = "guide", "pcg.yaml", "guided_sessions.zarr"


@dataclass
class GuidedConfig(LoopConfig):
    """``configs/loop/guided.yaml``; ``mode`` sets ``train_mode``."""

    method: str = "guided"
    sources: Any = field(default_factory=lambda: ["guided"])
    mode: str = "ft"
    expert_weight: float = 0.2       # FT: the demos' share of a batch against the successes' 1
    guide_rollouts: int = 20         # base rollouts (successes and failures) for the dynamics model
    guide_seed: int = 50_000         # their seeds: guide_seed, guide_seed + 1, ...
    guide_steps: int = 2000          # dynamics model training steps
    guide_horizon: int = 8           # actions per prediction (ReGuide's frameskip)
    phases: int = 4
    guide_scale: float = 0.05        # c in x0' = x0 - c grad d
    guide_max_timestep: int = 20     # guide the denoising steps at t <= this

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"unknown guided mode '{self.mode}'; valid modes: {', '.join(MODES)}")
        self.train_mode = MODES[self.mode]
        super().__post_init__()
        if self.expert_weight < 0 or self.guide_rollouts < 1:
            raise ValueError(f"expert_weight must be >= 0 and guide_rollouts >= 1, got {self.expert_weight} and "
                             f"{self.guide_rollouts}")


class Guided(Method):
    """See the module docstring."""

    name = "guided"
    config_class = GuidedConfig

    def collect(self, r: int, policy: Any, policy_id: str) -> Any:
        self.ensure_guide(policy, policy_id)
        return super().collect(r, policy, policy_id)

    def ensure_guide(self, policy: Any, policy_id: str) -> Path:
        """The run's guide, built from the base policy's rollouts and the demos when missing."""
        from robot_learn.data import EpisodeStore
        from robot_learn.policies.phase_prototypes import PhaseSettings
        from robot_learn.training.phase_guide import build_phase_guide

        cfg, directory = self.cfg, self.ctx.run_dir / GUIDE_DIR
        if (directory / PCG_FILE).is_file():
            return directory
        rollouts = EpisodeStore.open_or_create(self.ctx.run_dir / "base_rollouts.zarr")
        try:
            run_session(self.ctx, 0, policy, policy_id, rollouts, None, cfg.guide_rollouts, cfg.guide_seed)
        finally:
            rollouts.close()
        rollouts = EpisodeStore.open(self.ctx.run_dir / "base_rollouts.zarr")
        record = build_phase_guide(self.ctx.demos, directory, rollouts=[rollouts.view(task=self.ctx.task)],
                                   encoder=policy.frame_encoder, horizon=cfg.guide_horizon, steps=cfg.guide_steps,
                                   phase_settings=PhaseSettings(phases=cfg.phases, delta_steps=cfg.guide_horizon))
        dyn = record["dynamics"]
        print(f"      guide: {record['demos']} demos + {record['rollouts']} base rollouts "
              f"({record['rollout_successes']} successes); dynamics held-out error {dyn.get('heldout_mse', 0):.3f} "
              f"against {dyn.get('no_change_mse', 0):.3f} for no change")
        (directory / PCG_FILE).write_text(yaml.safe_dump(
            {"scale": cfg.guide_scale, "max_timestep": cfg.guide_max_timestep}))
        return directory

    def curate(self, r: int, collected: Any, policy: Any, round_dir: Path) -> dict[str, Part]:
        demos = self.ctx.demos
        wins = self.successes(collected, r, source=["guided", "rollout"])
        if not wins.num_episodes:
            return {"base": Part(demos, 1.0)}
        if self.cfg.mode == "ft":
            return {"base": Part(demos, self.cfg.expert_weight), "successes": Part(wins, 1.0)}
        return {"base": Part(demos, demos.num_frames), "successes": Part(wins, wins.num_frames)}


def _guided(ctx: Any, r: int, policy: Any, policy_id: str, store: Any, episodes: int, seed: int) -> None:
    """Source ``guided``: sessions of ``policy`` sampled with the run's PCG guide, each episode
    copied into ``store`` as ``source=guided``."""
    from robot_learn.data import EpisodeStore
    from robot_learn.loops.aggregation import write_selection
    from robot_learn.policies.diffusion.phase_guidance import PCGSettings
    from robot_learn.training.phase_guide import load_phase_guide

    directory = ctx.run_dir / GUIDE_DIR
    if not (directory / PCG_FILE).is_file():
        raise ValueError(f"source 'guided' needs the run's guide in {directory}; it is built by loop=guided")
    settings = PCGSettings(**yaml.safe_load((directory / PCG_FILE).read_text()))
    sampler = load_phase_guide(directory, policy, ctx.task, settings)
    sessions = EpisodeStore.open_or_create(ctx.run_dir / SESSIONS_STORE)
    try:
        run_session(ctx, r, policy, policy_id, sessions, None, episodes, seed, steering=sampler)
        done = [int(e) for e in sessions.view(round=r, task=ctx.task).episodes]
        copied = store.view(round=r, task=ctx.task, source="guided").num_episodes
        whole = {e: [(0, sessions.episode_range(e)[1] - sessions.episode_range(e)[0])] for e in done[copied:]}
        write_selection(store, sessions, whole, "guided")
    finally:
        sessions.close()


register_source("guided", _guided)
