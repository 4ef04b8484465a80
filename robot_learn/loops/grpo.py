"""GRPO for the discrete-diffusion VLA, after World-Gymnast (arXiv 2602.02454).

Each iteration:
1. **Groups.** From each of ``groups`` start states, ``group_size`` rollouts of the
   current policy, sampling tokens at ``temperature``
   (:func:`~robot_learn.loops.group_rollouts.roll_group`), in a world model
   (``sources=[imagined]``: start frames from a store, success from the world model's
   scorer) or in the simulator (``sources=[autonomous]``: success from MuJoCo). The reward is binary success.
2. **Filter.** Only groups whose success rate lies in [``keep_low``, ``keep_high``] are
   kept: a group that all succeeded or all failed has no advantage to learn from.
3. **Advantages.** A rollout's advantage is its reward minus its group's mean, over the
   group's standard deviation; every token the rollout's chunks committed shares it.
4. **Update.** ``epochs`` passes of the clipped surrogate over the kept chunks: per token,
   ``min(rho A, clip(rho, 1 - clip_low, 1 + clip_high) A)`` with ``rho`` the ratio of the
   token's probability under the new weights to that under the weights that sampled it,
   averaged over all tokens (clip 0.2 / 0.28, no KL term, as World-Gymnast). A token's
   probability is that of its decoding round committing it given the round's input
   (:meth:`DiscreteDiffusionPolicy.trace_log_probs`); which positions a round keeps is not
   scored. The frame encoder stays frozen.

As a loop method (``robot-learn improve loop=grpo``) one round is ``iterations`` such
iterations, every rollout is written to the round's store (``source=synthetic`` when
imagined), and the round's policy is evaluated in the simulator.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from robot_learn.loops.group_rollouts import Group, roll_group
from robot_learn.loops.grpo_progress import GRPOProgress, clear_progress, keep_first_episodes, load_progress, save_progress
from robot_learn.loops.round import LoopConfig, Method
from robot_learn.training.checkpoint import CheckpointError

GRPO_SOURCES = ("imagined", "autonomous")


@dataclass
class GRPOSettings:
    """The update's knobs (World-Gymnast's values where they carry over)."""

    group_size: int = 8
    groups: int = 8              # start states (groups) per iteration
    iterations: int = 4
    keep_low: float = 0.1        # keep groups whose success rate is in [keep_low, keep_high]
    keep_high: float = 0.9
    clip_low: float = 0.2
    clip_high: float = 0.28
    lr: float = 1e-4
    temperature: float = 1.6     # token sampling temperature of the rollouts (and of their log-probs)
    epochs: int = 2              # passes over an iteration's kept chunks
    minibatch: int = 16          # chunks per gradient step
    max_grad_norm: float = 1.0

    def __post_init__(self) -> None:
        if self.group_size < 2:
            raise ValueError(f"grpo group_size must be >= 2 (advantages are relative to the group), got {self.group_size}")
        for key in ("groups", "iterations", "epochs", "minibatch"):
            if getattr(self, key) < 1:
                raise ValueError(f"grpo {key} must be >= 1, got {getattr(self, key)}")
        if not 0.0 <= self.keep_low <= self.keep_high <= 1.0:
            raise ValueError(f"grpo needs 0 <= keep_low <= keep_high <= 1, got {self.keep_low} and {self.keep_high}")
        if self.temperature <= 0 or self.lr <= 0:
            raise ValueError(f"grpo temperature and lr must be > 0, got {self.temperature} and {self.lr}")


def check_grpo_policy(policy: Any) -> None:
    """GRPO needs token log-probabilities: a discrete-diffusion policy; ValueError otherwise."""
    if not hasattr(policy, "trace_log_probs"):
        raise ValueError(f"GRPO needs a discrete-diffusion policy (its token log-probabilities); "
                         f"this policy is '{getattr(policy, 'name', type(policy).__name__)}'")


def kept_groups(groups: list[Group], s: GRPOSettings) -> list[tuple[Group, torch.Tensor]]:
    """Groups inside the success band, each with its rollouts' advantages ``[G]``."""
    out = []
    for group in groups:
        reward = torch.as_tensor(group.success, dtype=torch.float32)
        if not s.keep_low <= float(reward.mean()) <= s.keep_high or float(reward.std()) == 0.0:
            continue
        out.append((group, (reward - reward.mean()) / (reward.std(unbiased=False) + 1e-6)))
    return out


def grpo_update(policy: Any, optimizer: torch.optim.Optimizer, kept: list[tuple[Group, torch.Tensor]],
                s: GRPOSettings, seed: int = 0) -> dict[str, float]:
    """The clipped-surrogate passes of one iteration (see the module docstring); returns
    the mean loss, the fraction of tokens clipped and the mean |log ratio| of the last pass."""
    items = [(chunk, adv) for group, adv in kept for chunk in group.chunks if bool(chunk.alive.any())]
    if not items:
        return {"loss": 0.0, "clipped": 0.0, "log_ratio": 0.0, "chunks": 0}
    policy.eval()  # no dropout: the ratios must compare weights, not masks
    old, weights = [], []
    with torch.no_grad():
        for chunk, _ in items:
            log_probs, committed = policy.trace_log_probs(chunk.obs, chunk.trace, s.temperature)
            old.append(log_probs)
            weights.append((committed & chunk.alive.to(committed.device)[:, None, None]).float())
    params = [p for p in policy.parameters() if p.requires_grad]
    rng = np.random.default_rng(seed)
    losses, clipped, drift = [], [], []
    for _ in range(s.epochs):
        order = rng.permutation(len(items))
        for lo in range(0, len(order), s.minibatch):
            picked = order[lo:lo + s.minibatch]
            total = sum(float(weights[i].sum()) for i in picked)
            if total == 0:
                continue
            optimizer.zero_grad(set_to_none=True)
            batch_loss = 0.0
            for i in picked:
                chunk, adv = items[i]
                w = weights[i]
                new, _ = policy.trace_log_probs(chunk.obs, chunk.trace, s.temperature)
                log_ratio = (new - old[i]) * w
                ratio = torch.exp(log_ratio)
                a = adv.to(ratio.device)[:, None, None]
                surrogate = torch.minimum(ratio * a, ratio.clamp(1 - s.clip_low, 1 + s.clip_high) * a)
                loss = -(surrogate * w).sum() / total
                loss.backward()
                batch_loss += float(loss.detach())
                with torch.no_grad():
                    outside = ((ratio < 1 - s.clip_low) | (ratio > 1 + s.clip_high)) & (w > 0)
                    clipped.append(float(outside.sum()) / max(float(w.sum()), 1.0))
                    drift.append(float(log_ratio.abs().sum()) / max(float(w.sum()), 1.0))
            torch.nn.utils.clip_grad_norm_(params, s.max_grad_norm)
            optimizer.step()
            losses.append(batch_loss)
    return {"loss": float(np.mean(losses)) if losses else 0.0, "clipped": float(np.mean(clipped)),
            "log_ratio": float(np.mean(drift)), "chunks": len(items)}


@dataclass
class IterationLog:
    """One iteration's numbers."""

    iteration: int
    rollouts: int
    success_rate: float
    groups_kept: int
    stopped: int
    update: dict[str, float]


def run_grpo(policy: Any, env: Any, s: GRPOSettings, action_low: np.ndarray, action_high: np.ndarray,
             seed: int = 0, first_start: int = 0, on_group: Callable[[Group], None] | None = None,
             log: Callable[[str], None] = print, resume: GRPOProgress | None = None,
             on_iteration: Callable[[list[IterationLog], torch.optim.Optimizer], None] | None = None,
             ) -> list[IterationLog]:
    """``s.iterations`` GRPO iterations of ``policy`` (changed in place) in the group env
    ``env``; iteration ``i`` uses starts ``first_start + i * s.groups + j`` and sampling seeds
    ``seed + ...``. ``on_group`` sees every finished group (e.g. to write its episodes),
    ``on_iteration`` the logs and optimiser after every iteration (to checkpoint them).
    ``resume`` (with ``policy`` already holding its weights) goes on after its iterations."""
    check_grpo_policy(policy)
    params = [p for p in policy.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=s.lr, weight_decay=0.0)
    decode = policy.decode_settings
    history: list[IterationLog] = []
    if resume is not None:
        try:
            optimizer.load_state_dict(resume.optimizer)
        except (KeyError, ValueError) as exc:
            raise CheckpointError(f"the GRPO round checkpoint's optimiser state does not fit this policy ({exc}); "
                                  "remove the round's grpo_progress dir to redo it from its start") from exc
        history = [IterationLog(**h) for h in resume.history]
    for it in range(len(history), s.iterations):
        policy.set_decoding(token_temperature=s.temperature)
        groups = []
        for j in range(s.groups):
            start = first_start + it * s.groups + j
            group = roll_group(policy, env, start, seed + 1000 * it + j, action_low, action_high)
            groups.append(group)
            if on_group is not None:
                on_group(group)
        policy.decode_settings = decode
        kept = kept_groups(groups, s)
        update = grpo_update(policy, optimizer, kept, s, seed=seed + it)
        rollouts = sum(len(g.success) for g in groups)
        rate = sum(int(g.success.sum()) for g in groups) / rollouts
        entry = IterationLog(it, rollouts, rate, len(kept), sum(len(g.stopped) for g in groups), update)
        history.append(entry)
        log(f"grpo iteration {it + 1}/{s.iterations}: {rollouts} rollouts, success {rate:.0%}, "
            f"{len(kept)}/{len(groups)} groups kept, {update['chunks']} chunks, loss {update['loss']:+.4f}, "
            f"clipped {update['clipped']:.1%}, |log ratio| {update['log_ratio']:.4f}, "
            f"{entry.stopped} rollouts stopped by bad frames")
        if on_iteration is not None:
            on_iteration(history, optimizer)
    policy.decode_settings = decode
    return history


@dataclass
class GRPOLoopConfig(LoopConfig, GRPOSettings):
    """``configs/loop/grpo.yaml``: where the groups roll out (``sources``: ``[imagined]`` or
    ``[autonomous]``), the world model's settings as ``loop=world_model`` takes them, and
    the :class:`GRPOSettings` fields."""

    method: str = "grpo"
    sources: Any = field(default_factory=lambda: ["imagined"])
    world_model: str | None = None
    starts: str | None = None
    scorer: str = "nearest"

    def __post_init__(self) -> None:
        LoopConfig.__post_init__(self)
        GRPOSettings.__post_init__(self)
        names = list(self.sources)
        if len(names) != 1 or names[0] not in GRPO_SOURCES:
            raise ValueError(f"loop=grpo rolls its groups out in one place: sources must be one of "
                             f"{', '.join(f'[{n}]' for n in GRPO_SOURCES)}, got {names}")
        if self.train_lr is not None:
            raise ValueError(f"loop=grpo updates the policy at loop.lr ({self.lr:g}); loop.train_lr is for the "
                             f"loops that fine-tune on collected data, got {self.train_lr}")
        self.episodes = self.iterations * self.groups * self.group_size  # rollouts per round
        if names[0] == "imagined":
            from robot_learn.world_models.rollout import rollout_starts

            if not self.world_model:
                raise ValueError("loop=grpo with sources=[imagined] needs loop.world_model: a world-model dir or "
                                 "`robot-learn wm train` run dir")
            if not Path(self.world_model).exists():
                raise ValueError(f"loop.world_model '{self.world_model}' does not exist")
            self.starts = rollout_starts(self.world_model, self.starts, self.scorer,
                                         keys=("loop.starts", "loop.scorer"))


class GRPOLoop(Method):
    """See the module docstring: a round is ``iterations`` GRPO iterations, then evaluation."""

    name = "grpo"
    config_class = GRPOLoopConfig

    def round_plan(self) -> str:
        c: GRPOLoopConfig = self.cfg  # type: ignore[assignment]
        return (f"{c.iterations} GRPO iterations of {c.groups} groups x {c.group_size} rollouts "
                f"({c.sources and next(iter(c.sources))}) -> evaluate {c.eval_episodes}")

    def run_round(self, r: int, policy_dir: Path) -> tuple[Path, dict[str, Any]]:
        import json

        from robot_learn.data import EpisodeStore
        from robot_learn.policies import load_policy
        from robot_learn.world_models.rollout import task_spaces

        cfg: GRPOLoopConfig = self.cfg  # type: ignore[assignment]
        round_dir = self.ctx.run_dir / f"round_{r:02d}"
        round_dir.mkdir(parents=True, exist_ok=True)

        def where(path: Any) -> Any:  # a path compares by what it names, however it was given
            return os.path.realpath(path) if path and Path(path).exists() else path

        settings = {**{f.name: getattr(cfg, f.name) for f in fields(GRPOSettings)}, "sources": list(cfg.sources),
                    "world_model": where(cfg.world_model), "starts": where(cfg.starts), "scorer": where(cfg.scorer),
                    "collect_seed": cfg.collect_seed, "policy_dir": where(policy_dir), "task": self.ctx.task,
                    "max_steps": self.ctx.max_steps}
        progress = load_progress(round_dir, settings)  # a killed round goes on after its last iteration
        policy = load_policy(progress.policy_dir if progress else policy_dir)
        check_grpo_policy(policy)
        space = task_spaces(self.ctx.task)[0]
        if progress:
            keep_first_episodes(round_dir / "rollouts.zarr", progress.episodes)
            store = EpisodeStore.open_or_create(round_dir / "rollouts.zarr")
            print(f"round {r}: resuming after GRPO iteration {len(progress.history)}/{cfg.iterations} "
                  f"({progress.episodes} rollouts kept)", flush=True)
        else:
            store = self.derived_store(round_dir, "rollouts.zarr")
        imagined = "imagined" in cfg.sources
        first = (r - 1) * cfg.iterations * cfg.groups

        def write(group: Group) -> None:
            for i, episode in enumerate(group.episodes):
                if i not in group.stopped and len(episode):
                    episode.commit(store, {"task": self.ctx.task, "instruction": group.instruction,
                                           "success": bool(group.success[i]), "seed": cfg.collect_seed + group.start,
                                           "source": "synthetic" if imagined else "rollout",
                                           "round": r, "policy_id": str(policy_dir)})
            for line in group.stopped.values():
                print(f"round {r}: imagined rollout stopped, not written: {line}")

        env = self._group_env(policy, imagined)
        try:
            history = run_grpo(policy, env, cfg, space.low, space.high, seed=cfg.collect_seed + 1000 * r,
                               first_start=first, on_group=write, resume=progress,
                               on_iteration=lambda logs, optimizer: save_progress(
                                   round_dir, policy, optimizer, [asdict(h) for h in logs], store.num_episodes,
                                   settings))
        finally:
            env.close()
        new_dir = round_dir / "policy"
        policy.save(new_dir)
        (round_dir / "grpo.json").write_text(json.dumps([asdict(h) for h in history], indent=2))
        numbers = self.evaluate(r, new_dir, store, {})
        numbers["grpo"] = [asdict(h) for h in history]
        clear_progress(round_dir)  # last: a kill while evaluating reruns only the evaluation
        return new_dir, numbers

    def _group_env(self, policy: Any, imagined: bool) -> Any:
        from robot_learn.evaluation.rollout import policy_cameras
        from robot_learn.loops.group_rollouts import ImaginedGroup, SimGroup

        cfg: GRPOLoopConfig = self.cfg  # type: ignore[assignment]
        if not imagined:
            cameras, size = policy_cameras(policy)
            return SimGroup(self.ctx.task, cameras, size or 64, self.ctx.max_steps, cfg.group_size,
                            seed_base=cfg.collect_seed)
        from robot_learn.data import EpisodeStore, EpisodeView
        from robot_learn.world_models import load_world_model
        from robot_learn.world_models.rollout import check_policy_fits, make_scorer, task_spaces

        model = load_world_model(cfg.world_model, task=self.ctx.task)
        check_policy_fits(policy, model, int(task_spaces(model.config.task)[0].shape[0]))
        store = EpisodeStore.open(cfg.starts, mode="r")
        view = EpisodeView(store, range(store.num_episodes))
        return ImaginedGroup(model, view, make_scorer(cfg.scorer, view, model), self.ctx.max_steps, cfg.group_size)
