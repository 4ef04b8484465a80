"""The HITL improvement loop: one round = collect -> curate -> train -> evaluate.

Reads in the order a round runs (:func:`run_hitl_round`):

1. **Collect** ``episodes`` episodes on the robot (the MuJoCo twin here) with the
   current policy under the operator (a :class:`HITLSession`; resumes after the
   last committed episode). Method ``autonomous`` runs without an operator.
2. **Curate** what goes into training:
   - ``hgdagger`` (HG-DAgger, Kelly et al. 2019): only the human-controlled runs of
     every round so far, labelled with the human's actions, plus the base demos;
   - ``hgdagger_curated`` (HELP): also the progress and recovery segments of the
     autonomous steps, found by a progress critic; mixed base:human:curated = 1:1:1;
   - ``recap`` (RECAP): all demos and collected episodes, each step labelled with
     the advantage indicator of a distributional value critic (human steps positive);
   - ``autonomous`` (control): the successful autonomous rollouts plus the demos.
3. **Train**: fine-tune from the current checkpoint or retrain from scratch.
4. **Evaluate** on held-out seeds; the round's numbers go to the round report.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from robot_learn.loops.aggregation import (
    ADVANTAGE_STATS, AdvantageSampler, MixtureSampler, human_steps_mask, open_or_create, runs, split_batch,
    write_selection,
)
from robot_learn.loops.policy_actor import PolicyActor
from robot_learn.loops.recap import ADVANTAGE_KEY, AdvantageConditioned, add_advantage_input
from robot_learn.loops.session import HITLSession

METHODS = ("hgdagger", "hgdagger_curated", "recap", "autonomous")
TRAIN_MODES = ("finetune", "retrain")


@dataclass
class HITLLoopConfig:
    """Settings of the HITL loop (``configs/loop/hitl.yaml``)."""

    method: str = "hgdagger"
    episodes: int = 10                 # collected per round
    collect_seed: int = 100_000        # round r uses collect_seed + 1000 r + i
    train_mode: str = "finetune"
    train_steps: int = 500
    mix: dict[str, float] = field(default_factory=lambda: {"base": 1.0, "human": 1.0, "curated": 1.0})
    curate_window: int = 5
    curate_eps: float = 0.02
    critic_steps: int = 300
    recap_dropout: float = 0.3
    recap_percentile: float = 30.0
    recap_n_step: int = 10
    eval_episodes: int = 20
    eval_seed: int = 1_000_000
    eval_workers: int = 1

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"unknown HITL method '{self.method}'; valid methods: {', '.join(METHODS)}")
        if self.train_mode not in TRAIN_MODES:
            raise ValueError(f"unknown train_mode '{self.train_mode}'; valid: {', '.join(TRAIN_MODES)}")
        self.mix = {str(k): float(v) for k, v in dict(self.mix).items()}


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


def run_hitl_round(ctx: LoopContext, cfg: HITLLoopConfig, r: int, policy_dir: Path) -> tuple[Path, dict[str, Any]]:
    """Run round ``r`` starting from the policy saved at ``policy_dir``; returns the new
    policy's directory and the round's numbers (see :mod:`robot_learn.loops.rounds`)."""
    from robot_learn.policies import load_policy

    round_dir = ctx.run_dir / f"round_{r:02d}"
    round_dir.mkdir(parents=True, exist_ok=True)
    collected = open_or_create(ctx.run_dir / "collected.zarr")

    # 1. Collect.
    policy = load_policy(policy_dir)
    condition = {ADVANTAGE_KEY: [1.0]} if ADVANTAGE_KEY in policy.obs_shapes else None
    operator = None if cfg.method == "autonomous" or ctx.make_operator is None else ctx.make_operator(r)
    robot = ctx.make_robot()
    session = HITLSession(robot, PolicyActor(policy, seed=r, condition=condition), operator, collected, ctx.task,
                          rate_hz=ctx.rate_hz, max_steps=ctx.max_steps, round_index=r, policy_id=str(policy_dir),
                          log_path=ctx.run_dir / "sessions.jsonl")
    session.run(cfg.episodes, seed=cfg.collect_seed + 1000 * r)
    robot.disconnect()
    if session.paused:
        raise RuntimeError(f"round {r}: session paused ({session.arbiter.history[-1:]}); "
                           "episodes so far are kept; rerun to resume")

    # 2. Curate.
    sampler = curate(ctx, cfg, r, collected, round_dir, policy)

    # 3. Train.
    new_dir = train(ctx, cfg, r, policy_dir, sampler, round_dir)

    # 4. Evaluate.
    from robot_learn.evaluation import evaluate

    trained = load_policy(new_dir)
    if ADVANTAGE_KEY in trained.obs_shapes:
        trained = AdvantageConditioned(trained, 1.0)
    result = evaluate(trained, ctx.task, episodes=cfg.eval_episodes, seed=cfg.eval_seed, workers=cfg.eval_workers,
                      videos=0, max_steps=ctx.max_steps, vectorization="sync")
    return new_dir, round_numbers(collected, r, ctx.rate_hz, result.summary, sampler_sizes(sampler))


def curate(ctx: LoopContext, cfg: HITLLoopConfig, r: int, collected: Any, round_dir: Path, policy: Any) -> Any:
    """Build this round's training sampler (see the module docstring, step 2)."""
    from robot_learn.data import WindowSampler

    train_store_path = round_dir / "train.zarr"
    if train_store_path.exists():
        shutil.rmtree(train_store_path)  # derived data: rebuilt from the collected store
    out = open_or_create(train_store_path)
    so_far = collected.view(round=list(range(1, r + 1)), task=ctx.task)
    keys = ctx.demos.store.keys
    obs_keys = tuple(k for k in policy.training_obs_keys if k != ADVANTAGE_KEY)
    bs = int(ctx.train_config.batch_size)

    def windows(view: Any, batch_size: int, seed: int) -> Any:
        return WindowSampler(view, obs_keys=obs_keys, obs_horizon=policy.obs_horizon,
                             action_horizon=policy.action_horizon, batch_size=batch_size, seed=seed + 1000 * r)

    if cfg.method == "recap":
        from robot_learn.critics import recap_labels

        labels = recap_labels(so_far, obs_keys=[k for k in obs_keys if not k.startswith("images/")],
                              percentile=cfg.recap_percentile, n_step=cfg.recap_n_step,
                              max_length=ctx.max_steps, critic_steps=cfg.critic_steps, seed=r)
        shares = split_batch(bs, {"base": ctx.demos.num_frames, "collected": so_far.num_frames})
        demo_ind = {int(e): np.ones(ctx.demos.store.episode_range(int(e))[1], dtype=bool)
                    for e in ctx.demos.episodes}  # demos are human: positive
        collected_ind = dict(zip(map(int, labels.episodes), labels.indicator))
        return MixtureSampler({
            "base": AdvantageSampler(windows(ctx.demos, shares["base"], 0), demo_ind, cfg.recap_dropout, seed=r),
            "collected": AdvantageSampler(windows(so_far, shares["collected"], 1), collected_ind,
                                          cfg.recap_dropout, seed=r + 1)})

    human = {int(e): runs(human_steps_mask(collected, int(e)), min_length=2) for e in so_far.episodes}
    if cfg.method in ("hgdagger", "hgdagger_curated"):
        write_selection(out, collected, human, "intervention", keys)
    if cfg.method == "hgdagger_curated":
        from robot_learn.critics import ProgressCritic, keep_mask, label_steps

        critic = ProgressCritic([k for k in obs_keys if not k.startswith("images/")])
        critic.fit(ctx.demos, steps=cfg.critic_steps, seed=r)
        kept = {}
        for e in so_far.episodes:
            predicted = critic.predict(critic.features(collected, int(e)))
            keep = keep_mask(label_steps(predicted, cfg.curate_window, cfg.curate_eps))
            kept[int(e)] = runs(keep & ~human_steps_mask(collected, int(e)), min_length=4)
        write_selection(out, collected, kept, "rollout", keys)
    if cfg.method == "autonomous":
        wins = collected.view(round=list(range(1, r + 1)), task=ctx.task, success=True)
        write_selection(out, collected, {int(e): [(0, collected.episode_range(int(e))[1]
                                                   - collected.episode_range(int(e))[0])] for e in wins.episodes},
                        "rollout", keys)

    parts: dict[str, Any] = {"base": ctx.demos}
    if out.num_episodes:
        for name, source in (("human", "intervention"), ("curated", "rollout")):
            view = out.view(source=source)
            if view.num_episodes:
                parts[name] = view
    if cfg.method == "hgdagger_curated":
        weights = {n: cfg.mix.get(n, 1.0) for n in parts}
    else:  # D = D_base U D_new: windows drawn uniformly over all of it
        weights = {n: float(v.num_frames) for n, v in parts.items()}
    shares = split_batch(bs, weights)
    return MixtureSampler({n: windows(v, shares[n], i) for i, (n, v) in enumerate(parts.items())})


def train(ctx: LoopContext, cfg: HITLLoopConfig, r: int, policy_dir: Path, sampler: Any, round_dir: Path) -> Path:
    """Fine-tune from ``policy_dir`` or retrain from scratch; returns the EMA policy's directory."""
    import dataclasses

    from robot_learn.policies import load_policy, make_policy
    from robot_learn.training import Trainer

    current = load_policy(policy_dir)
    if cfg.train_mode == "retrain":
        stats = ctx.demos.store.stats([k for k in current.config.state_dims if k != ADVANTAGE_KEY] + ["action"])
        if ADVANTAGE_KEY in current.config.state_dims:
            stats[ADVANTAGE_KEY] = ADVANTAGE_STATS
        instructions = sorted({str(s) for s in ctx.demos.store.meta["instruction"]})
        policy = make_policy(current.name, current.config, stats, instructions=instructions)
    else:
        policy = current
    if cfg.method == "recap":
        policy = add_advantage_input(policy)
    train_cfg = dataclasses.replace(ctx.train_config, out_dir=str(round_dir / "train"), steps=cfg.train_steps,
                                    seed=ctx.train_config.seed + r)
    fit = Trainer(policy, sampler, train_cfg).fit()
    return Path(fit["final_policy_dir"])


def sampler_sizes(sampler: Any) -> dict[str, int]:
    """Frames available to each part of a mixture sampler."""
    out = {}
    for name, part in sampler.samplers.items():
        inner = getattr(part, "sampler", part)
        out[name] = int(len(inner))
    return out


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
