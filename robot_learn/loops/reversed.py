"""Reversed easy-task data (rev2fwd): learn a hard task A from its easy reverse B.

Only B has an expert (or a teleoperator). A's expert never makes training data here;
A's success test only judges. Episodes of B reversed in time are demonstrations of A
(:mod:`robot_learn.envs.reversal`): B starts at A's goal, and B's expert, recorded past
success until it is back at rest, ends where A's episodes start.

**Round 0** (the base; :meth:`Reversed.base_data`): B's expert records episodes to
rest, putting the object down anywhere on the table (``drop_spot: anywhere``, so the
reversed episodes start across A's start distribution; ``beside`` its target, B's
default, they do not, and A learns nothing from them: docs/benchmarks.md); reversed
(with ``trim_after_release: N``, each ends N rows after its final release, without the
return to rest that follows A's success), they are A's demonstrations (``reversed_demos.zarr``) and the base A
policy trains on them.

A round, in order:
1. **Collect** the round's episodes from the configured sources (default:
   ``autonomous``, A's policy alone; source ``reversed`` records fresh B episodes
   and commits them reversed, as A demonstrations).
2. **Curate**: A's successful episodes of every round so far, its rollouts
   kinematically filtered (``filter: kinematic``; :mod:`~robot_learn.loops.kinematic_filter`:
   static frames dropped, slow stretches resampled, gripper events densified;
   ``filter: none`` keeps them whole), plus the reversed base data; windows drawn
   uniformly over all of it (DAgger-style aggregation). ``filter: critic`` instead cuts
   and thins every training episode, the reversed ones included, with a value model
   trained on A's rollouts (:mod:`~robot_learn.loops.critic_filter`); ``both`` does
   the critic's cut, then the kinematic re-timing of A's rollouts.
3. **Train**: the shared fine-tuning modes (:mod:`robot_learn.loops.finetune`).
4. **Evaluate** A on held-out seeds, and B's policy (trained once on B's demos, for
   ``easy_train_steps``) on B's: the round reports both, the data added and the filter's yield;
   then ``cycles`` reset-free cycles (:mod:`~robot_learn.loops.reset_free`): A's policy and B's
   take turns for up to ``cycle_legs`` legs, each starting where the other left the scene, and
   the round reports the legs solved in a row and the steps they took.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from robot_learn.envs.task_base import DROP_SPOTS
from robot_learn.loops.critic_filter import CriticFilter
from robot_learn.loops.kinematic_filter import KinematicFilter
from robot_learn.loops.round import DemoRecipe, LoopConfig, Method, Part
from robot_learn.loops.sources import register_source

FILTERS = ("kinematic", "critic", "both", "none")
SOURCES = ("autonomous", "reversed")  # ``hitl``'s simulated operator is the hard task's expert


@dataclass
class ReversedConfig(LoopConfig):
    """``configs/loop/reversed.yaml``."""

    method: str = "reversed"
    sources: Any = field(default_factory=lambda: ["autonomous"])
    drop_spot: str = "anywhere"        # where B's expert puts the object down: anywhere | beside (the target)
    trim_after_release: int | None = None  # reversed episodes end this many rows after their final release
    filter: str = "kinematic"          # what the training episodes go through: kinematic | critic | both | none
    kinematic: Any = field(default_factory=KinematicFilter)  # its settings (a mapping from YAML)
    critic: Any = field(default_factory=CriticFilter)        # the critic filter's (a mapping from YAML)
    easy_train_steps: int = 500        # B's policy (for B's success); 0: none
    cycles: int = 5                    # reset-free A -> B -> A ... cycles per round (need B's policy); 0: none
    cycle_legs: int = 10               # legs per cycle at most (it stops at the first failure)

    def __post_init__(self) -> None:
        super().__post_init__()
        refused = [s for s in self.sources if s not in SOURCES]
        if refused:
            raise ValueError(f"loop reversed cannot collect from {refused}: only the easy task has an expert, "
                             f"and the hard task's makes no training data; valid sources: {', '.join(SOURCES)}")
        if self.trim_after_release is not None and self.trim_after_release < 0:
            raise ValueError(f"trim_after_release must be >= 0 rows (or null: whole episodes), got "
                             f"{self.trim_after_release}")
        if self.drop_spot not in DROP_SPOTS:
            raise ValueError(f"unknown drop_spot '{self.drop_spot}'; valid: {', '.join(DROP_SPOTS)}")
        if self.filter not in FILTERS:
            raise ValueError(f"unknown filter '{self.filter}'; valid filters: {', '.join(FILTERS)}")
        self.kinematic = _settings(self.kinematic, KinematicFilter, "kinematic")
        self.critic = _settings(self.critic, CriticFilter, "critic")
        for name in ("easy_train_steps", "cycles", "cycle_legs"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")


def _settings(value: Any, kind: type, name: str) -> Any:
    """A filter's settings from a YAML mapping (ValueError listing the valid keys), or as given."""
    if not isinstance(value, Mapping):
        return value
    names = [f.name for f in dataclasses.fields(kind)]
    unknown = sorted(set(value) - set(names))
    if unknown:
        raise ValueError(f"unknown {name} filter settings {unknown}; valid: {', '.join(names)}")
    return kind(**value)


class Reversed(Method):
    """See the module docstring."""

    name = "reversed"
    config_class = ReversedConfig

    def __init__(self, ctx: Any, cfg: ReversedConfig) -> None:
        super().__init__(ctx, cfg)
        ctx.reversal = cfg  # where source ``reversed``'s expert puts the object down

    # ----- 0. the base: B's demos, reversed --------------------------------------------
    @classmethod
    def demo_recipe(cls, cfg: LoopConfig, task: str) -> DemoRecipe:
        """B's expert, its episodes recorded to rest, the object put down where ``drop_spot``
        says (ValueError listing the pairs for an A without a B)."""
        from robot_learn.envs import easy_task_of

        return DemoRecipe(easy_task_of(task), to_rest=True, drop_spot=cfg.drop_spot)

    @classmethod
    def base_data(cls, cfg: LoopConfig, task: str, expert_demos: Any, run_dir: Path) -> Any:
        """B's demos reversed into ``run_dir/reversed_demos.zarr`` (``reversed_demos_trim<N>.zarr``
        with ``trim_after_release``; rebuilt when B's demos changed)."""
        trim = cfg.trim_after_release
        name = "reversed_demos.zarr" if trim is None else f"reversed_demos_trim{trim}.zarr"
        return reversed_store(expert_demos, Path(run_dir) / name, trim).view(task=task)

    # ----- 2. curate -------------------------------------------------------------------
    def curate(self, r: int, collected: Any, policy: Any, round_dir: Path) -> dict[str, Part]:
        cfg, demos = self.cfg, self.ctx.demos
        out = self.derived_store(round_dir)
        self.filter_numbers = {"filter": cfg.filter, "episodes": 0, "successes": 0, "frames_in": 0, "frames_out": 0}
        critic = self.round_critic(r, collected, round_dir) if cfg.filter in ("critic", "both") else None
        this_round = set(map(int, collected.view(round=r, task=self.ctx.task).episodes))
        for e in map(int, self.so_far(collected, r).view(success=True).episodes):
            episode = collected.episode(e)
            steps, meta = {k: episode["steps"][k] for k in demos.store.keys}, episode["meta"]
            own = meta["source"] != "reversed"  # A's own rollout: through the whole filter
            kept = self.filtered(steps, critic, own, where=f"episode {e} of {collected.path}")
            if own and e in this_round:
                self.filter_numbers["frames_in"] += len(steps["action"])
                self.filter_numbers["frames_out"] += len(kept["action"])
            out.append_episode(kept, {k: v for k, v in meta.items() if k != "created"})
        rollouts = collected.view(round=r, task=self.ctx.task, source=["rollout", "intervention"])
        self.filter_numbers["episodes"] = rollouts.num_episodes
        self.filter_numbers["successes"] = rollouts.view(success=True).num_episodes
        base = demos if critic is None else self.cut_base(critic, round_dir)
        parts = {"base": Part(base, base.num_frames)}
        if out.num_episodes:
            view = out.view()
            parts["collected"] = Part(view, view.num_frames)
        return parts

    def filtered(self, steps: dict, critic: Any, own: bool, where: str) -> dict:
        """An episode through the round's filter: the critic (when on) cuts and thins every
        episode; the kinematic filter (when on) re-times A's own rollouts only."""
        from robot_learn.loops.critic_filter import apply_critic

        if critic is not None:
            steps = apply_critic(critic, steps, where=where)
        if own and self.cfg.filter in ("kinematic", "both"):
            steps = self.cfg.kinematic.apply(steps, where=where)
        return steps

    def round_critic(self, r: int, collected: Any, round_dir: Path) -> Any:
        """The value model of the critic filter: the one saved at ``critic.path``, or one
        trained on A's own rollouts of rounds 1..r (successes and failures), saved in
        ``round_dir/critic``."""
        from robot_learn.loops.critic_filter import load_critic, train_critic

        if self.cfg.critic.path:  # ValueError when it judges another task
            return load_critic(self.cfg.critic.path, self.ctx.task)
        rollouts = self.so_far(collected, r).view(source=["rollout", "intervention"])
        if not rollouts.num_episodes:
            raise ValueError(f"filter {self.cfg.filter} trains its critic on {self.ctx.task}'s own rollouts, and "
                             f"round {r} has none: add source autonomous")
        episodes = [({k: collected.episode(int(e))["steps"][k] for k in (*self.cfg.critic.obs_keys, "action")},
                     bool(ok)) for e, ok in zip(rollouts.episodes, rollouts.meta["success"])]
        critic = train_critic(self.ctx.task, episodes, self.cfg.critic, seed=r)
        critic.save(round_dir / "critic")
        return critic

    def cut_base(self, critic: Any, round_dir: Path) -> Any:
        """The reversed base demonstrations cut and thinned by the critic (``round_dir/base.zarr``)."""
        from robot_learn.data import EpisodeStore

        demos = self.ctx.demos
        with self.derived_store(round_dir, "base.zarr") as store:
            for e in map(int, demos.episodes):
                episode = demos.store.episode(e)
                steps = {k: episode["steps"][k] for k in demos.store.keys}
                store.append_episode(self.filtered(steps, critic, False, f"episode {e} of {demos.store.path}"),
                                     {k: v for k, v in episode["meta"].items() if k != "created"})
        base = EpisodeStore.open(store.path).view()
        self.filter_numbers["base_frames_in"], self.filter_numbers["base_frames_out"] = demos.num_frames, base.num_frames
        return base

    # ----- 4. evaluate -----------------------------------------------------------------
    def evaluate(self, r: int, policy_dir: Path, collected: Any, frames: dict[str, int]) -> dict[str, Any]:
        """A's success on held-out seeds, B's (its policy trained once), data added, filter yield."""
        numbers = super().evaluate(r, policy_dir, collected, frames)
        f = dict(self.filter_numbers)
        f["frame_ratio"] = f["frames_out"] / f["frames_in"] if f["frames_in"] else None
        numbers["filter"] = f
        numbers.update(self.easy_numbers())
        notes = [f"{f['filter']} filter: {f['successes']}/{f['episodes']} rollouts succeeded; "
                 f"{f['frames_in']} -> {f['frames_out']} frames"]
        if "easy_success_rate" in numbers:
            notes.append(f"easy task {numbers['easy_task']}: success {numbers['easy_success_rate']:.1%} "
                         f"[{numbers['easy_ci_low']:.1%}, {numbers['easy_ci_high']:.1%}]")
            if self.cfg.cycles and self.cfg.cycle_legs:
                c = numbers["reset_free"] = self.cycle_numbers(policy_dir, Path(numbers["easy_policy_dir"]))
                steps = "-" if c["mean_steps_to_success"] is None else f"{c['mean_steps_to_success']:.0f}"
                notes.append(f"reset-free: legs solved in a row {c['consecutive_successes']} (of at most "
                             f"{self.cfg.cycle_legs}), longest {c['longest']}, mean steps to success {steps}")
        numbers["notes"] = notes
        return numbers

    def cycle_numbers(self, policy_dir: Path, easy_dir: Path) -> dict[str, Any]:
        """``cycles`` reset-free cycles of A's policy and B's from A's held-out seeds
        (``eval_seed + i``), summarised (:func:`~robot_learn.loops.reset_free.summarize`)."""
        from robot_learn.envs import easy_task_of, make_env
        from robot_learn.evaluation.rollout import policy_cameras
        from robot_learn.loops.reset_free import PolicyLeg, reset_free_cycles, summarize
        from robot_learn.policies import load_policy

        cfg, ctx = self.cfg, self.ctx
        policies = {ctx.task: load_policy(policy_dir), easy_task_of(ctx.task): load_policy(easy_dir)}
        cameras, size = policy_cameras(policies[ctx.task])

        def env_of(task: str) -> Any:
            drop = {} if task == ctx.task else {"drop_spot": cfg.drop_spot}  # B's success: where it drops
            return make_env(task, cameras=cameras, image_size=size or 96, max_steps=ctx.max_steps, **drop)

        return summarize([reset_free_cycles(ctx.task, {t: PolicyLeg(p, seed=cfg.eval_seed + i)
                                                       for t, p in policies.items()},
                                            cfg.cycle_legs, cfg.eval_seed + i, ctx.max_steps, make_env=env_of)
                          for i in range(cfg.cycles)])

    def easy_conditions(self) -> Any:
        """The rounds' conditions, with B's drop spot: where B's episodes run."""
        from robot_learn.envs.conditions import DEFAULT_CONDITIONS

        return dataclasses.replace(self.ctx.conditions or DEFAULT_CONDITIONS, drop_spot=self.cfg.drop_spot)

    def easy_numbers(self) -> dict[str, Any]:
        """B's policy, trained once on B's demos for ``easy_train_steps`` (A's base policy
        config, its own normalisers) and evaluated once on B's held-out seeds; cached in
        ``run_dir/easy/eval.json``. Empty with ``easy_train_steps: 0``."""
        from robot_learn.envs import easy_task_of
        from robot_learn.evaluation import evaluate
        from robot_learn.loops.finetune import training_sampler
        from robot_learn.policies import load_policy
        from robot_learn.training import Trainer, build_policy_for_view

        cfg, ctx = self.cfg, self.ctx
        cache = ctx.run_dir / "easy" / "eval.json"
        if not cfg.easy_train_steps:
            return {}
        if cache.exists():
            return json.loads(cache.read_text())
        easy, demos = easy_task_of(ctx.task), ctx.expert_demos
        if demos is None:
            raise ValueError(f"the reversed loop's context has no easy-task demos (expert_demos) to train "
                             f"{easy}'s policy on; give them, or set easy_train_steps: 0")
        base = load_policy(ctx.base_policy_dir)
        policy = build_policy_for_view(base.config, demos, name=base.name)
        sampler = training_sampler(policy, {"easy": Part(demos, 1.0)}, int(ctx.train_config.batch_size), seed=0,
                                   dropout=0.0, memory=ctx.sampler_memory)
        train_cfg = dataclasses.replace(ctx.train_config, out_dir=str(ctx.run_dir / "easy"),
                                        steps=cfg.easy_train_steps)
        policy_dir = Path(Trainer(policy, sampler, train_cfg).fit()["final_policy_dir"])
        s = evaluate(load_policy(policy_dir), easy, episodes=cfg.eval_episodes, seed=cfg.eval_seed,
                     workers=cfg.eval_workers, videos=0, max_steps=ctx.max_steps, vectorization="sync",
                     conditions=self.easy_conditions()).summary
        numbers = {"easy_task": easy, "easy_success_rate": s.success_rate, "easy_ci_low": s.ci_low,
                   "easy_ci_high": s.ci_high, "easy_eval_episodes": s.episodes, "easy_policy_dir": str(policy_dir)}
        cache.write_text(json.dumps(numbers, indent=2))
        return numbers


def reversed_store(expert_demos: Any, path: Path, trim: int | None = None) -> Any:
    """The store at ``path`` holding ``expert_demos``' successful episodes reversed (and
    trimmed ``trim`` rows after their final release); rebuilt unless it was made from the
    same episodes (their seeds, in order)."""
    import shutil

    from robot_learn.data import EpisodeStore
    from robot_learn.envs import reverse_into

    store = expert_demos.store
    seeds = [int(s) for s in expert_demos.meta["seed"][expert_demos.meta["success"].astype(bool)]]
    if path.exists():
        made = EpisodeStore.open(path)
        if [int(s) for s in made.meta["seed"]] == seeds:
            return made
        made.close()
        shutil.rmtree(path)
    with EpisodeStore.create(path) as out:
        reverse_into(out, store, expert_demos.episodes, trim=trim)
    return EpisodeStore.open(path)


# ----- source ``reversed``: fresh B episodes, reversed, as A demonstrations ----------------
def collect_reversed(ctx: Any, r: int, policy: Any, policy_id: str, store: Any, episodes: int, seed: int) -> None:
    """B's expert records ``episodes`` episodes to rest (seeds ``seed + i``; the object put
    down where ``ctx.reversal.drop_spot`` says, default anywhere) with the
    cameras and observation keys the robot has (those of ``store`` once begun); each
    success is committed reversed (:func:`robot_learn.envs.reverse_recorded`) as an A
    demonstration of round ``r``. A rerun skips the seeds already committed."""
    from robot_learn.envs import easy_task_of, make_env, make_expert, reverse_recorded
    from robot_learn.envs.demos import record_demo_episode
    from robot_learn.envs.reversal import trim_after_release

    easy = easy_task_of(ctx.task)
    robot = ctx.make_robot()
    try:
        spec = robot.observation_spec()
    finally:
        robot.disconnect()
    cameras = [k.split("/", 1)[1] for k in spec if k.startswith("images/")]
    size = tuple(spec[f"images/{cameras[0]}"][:2]) if cameras else 96
    keys = [k for k in spec if not k.startswith("images/") and (not store.keys or k in store.keys)]
    done = set()
    if store.num_episodes:
        done = {int(s) for s in store.view(round=r, task=ctx.task, source="reversed").meta["seed"]}
    drop_spot = getattr(ctx.reversal, "drop_spot", "anywhere")
    env = make_env(easy, cameras=tuple(cameras), image_size=size, max_steps=ctx.max_steps, drop_spot=drop_spot)
    try:
        for s in range(seed, seed + episodes):
            if s in done:
                continue
            steps, meta = record_demo_episode(env, make_expert(easy, seed=s), s, keys, to_rest=True,
                                              timestamps=not store.keys or "timestamp" in store.keys)
            if meta["success"]:
                steps, meta = reverse_recorded(steps, {**meta, "task": easy, "source": "demo", "round": r},
                                               where=f"{easy} episode of seed {s}")
                store.append_episode(trim_after_release(steps, getattr(ctx.reversal, "trim_after_release", None)),
                                     meta)
    finally:
        env.close()


register_source("reversed", collect_reversed)
