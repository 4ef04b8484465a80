"""``robot-learn train``: the main job (Hydra app, config train.yaml).

Reads top to bottom in the order it runs:
1. demos: collect ``data.episodes`` expert episodes if the demo store is missing;
2. build the policy (normalisers from ``store.stats``) and the window sampler;
3. train with the Trainer (EMA weights; optional periodic evaluation);
4. evaluate the EMA policy on held-out seeds (from 1,000,000);
5. write report.json / report.md / success_per_task.png / videos into the run dir.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any, Sequence

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from robot_learn.cli.errors import CLIError
from robot_learn.cli.hydra_app import run_hydra_app
from robot_learn.cli.settings import device_setting, eval_settings, sampler_memory, setting
from robot_learn.training.frame_features import prepare_frame_features


def policy_name_for_config(config: Any) -> str:
    """The registered policy name whose config class ``config`` is an instance of."""
    from robot_learn.training.policy_builder import policy_name_for_config as name_for

    try:
        return name_for(config)
    except ValueError as err:
        raise CLIError(str(err)) from None


def instantiate_node(node: DictConfig, what: str, **kwargs: Any) -> Any:
    """``hydra.utils.instantiate`` with config mistakes turned into one-line errors."""
    from hydra.errors import InstantiationException
    from hydra.utils import instantiate

    try:
        return instantiate(node, **kwargs)
    except InstantiationException as err:
        # The cause (e.g. "unknown denoiser 'x'; valid choices: ...") is the useful part.
        cause = err.__cause__ or err
        raise CLIError(f"bad {what} config: {cause}") from None


def ensure_demos(cfg: DictConfig, task: str, path: str | Path | None = None, to_rest: bool = False,
                 drop_spot: str = "beside") -> Any:
    """Open the demo store at ``path`` (default ``cfg.data.path``), collecting ``task``'s
    expert demos first if it is missing (``to_rest``: episodes go on until the expert is
    back at rest, for time reversal; ``drop_spot``: where a reverse task's expert puts the
    object down)."""

    from robot_learn.cli.inspect_store import open_store
    from robot_learn.cli.settings import env_conditions
    from robot_learn.envs.demos import DEFAULT_OBS_KEYS, OPTIONAL_OBS_KEYS, collect_demos, staged_store

    path = Path(path or cfg.data.path)
    collected = not path.exists()
    conditions = env_conditions(cfg, "data.")  # data.start_spread etc.; absent: the defaults
    conditions = dataclasses.replace(conditions, drop_spot=drop_spot)
    if collected:
        under = "" if conditions.is_default else f" ({conditions.describe()})"
        print(f"[1/4] no demo store at {path}: collecting {cfg.data.episodes} expert episodes of {task}{under}")
        wanted = [k for k in OPTIONAL_OBS_KEYS if k in dict(cfg.policy.get("state_dims") or {})]
        with staged_store(path) as staging:
            summary = collect_demos(task, int(cfg.data.episodes), staging, noise=float(cfg.data.noise),
                                    seed=int(cfg.data.seed), cameras=list(cfg.data.cameras or []),
                                    image_size=int(cfg.data.image_size), max_steps=cfg.task.max_steps,
                                    obs_keys=(*DEFAULT_OBS_KEYS, *wanted), to_rest=to_rest, conditions=conditions)
        print(f"      {summary.successes}/{summary.attempted} succeeded, {summary.stored} stored")
    else:
        print(f"[1/4] using demo store {path}")
    store = open_store(path)
    demos = store.view(task=task, success=True)
    if demos.num_episodes == 0:
        raise CLIError(f"demo store {path} has no successful '{task}' episodes")
    if not collected and demos.num_episodes < int(cfg.data.episodes):
        print(f"      note: the store holds {demos.num_episodes} successful '{task}' episodes, fewer than "
              f"data.episodes={int(cfg.data.episodes)}, which only applies when the store is collected; "
              f"give a new data.path to collect {int(cfg.data.episodes)}")
    return demos


def check_store_fits_policy(view: Any, policy_config: Any, path: str) -> None:
    """The demo store must hold every observation the policy reads, at the right shape."""
    schema = view.store.schema
    needed = {k: (int(v),) for k, v in policy_config.state_dims.items()
              if not (policy_config.frame_encoder and k == "features")}  # from the frame encoder
    size = int(policy_config.image_size)
    needed.update({f"images/{c}": (size, size, 3) for c in policy_config.camera_names})
    needed["action"] = (int(policy_config.action_dim),)
    for key, shape in needed.items():
        if key not in schema:
            raise CLIError(f"demo store {path} has no '{key}' (keys: {', '.join(schema)}); the "
                           f"policy needs it. Delete the store or set data.path to a new one "
                           f"(with data.cameras=[...]) to collect suitable demos")
        if tuple(schema[key]["shape"]) != shape:
            raise CLIError(f"demo store {path}: '{key}' has shape {tuple(schema[key]['shape'])} "
                           f"but the policy expects {shape}")


def check_policy_size(name: str, config: Any) -> None:
    """Refuse a policy too large for this machine before demos are collected
    (``make_policy`` checks again, with the demos' vocabulary)."""
    from robot_learn.policies import get_policy_class
    from robot_learn.policies.config_checks import check_model_size

    cls = get_policy_class(name)
    try:
        check_model_size(lambda c: cls(c, stats=None, instructions=["a placeholder instruction"]), config)
    except ValueError as err:
        raise CLIError(f"bad policy config: {err}") from None


def check_resume(train_cfg: Any) -> int | None:
    """The step a run resumes from (None: a fresh start); CLIError when ``train.steps``
    is below it (the run would train nothing)."""
    from robot_learn.training.checkpoint import check_resume_steps

    if not train_cfg.resume:
        return None
    try:
        return check_resume_steps(train_cfg.out_dir, train_cfg.steps, key="train.steps")
    except ValueError as err:
        raise CLIError(f"{err} (run_dir {train_cfg.out_dir})") from None


def join_ranks(train_cfg: Any, run_dir: Path) -> Any:
    """This process's place among torchrun's ranks (a single-process context outside
    torchrun); CLIError when the ranks resolved different run dirs (a ``${now:...}``
    that ticked between their starts)."""
    from robot_learn.training.distributed import init_distributed

    group = init_distributed(train_cfg.device, train_cfg.ddp_backend)
    run_dirs = sorted(set(group.gather_objects(str(run_dir))))
    if len(run_dirs) > 1:
        group.close()
        raise CLIError(f"the ranks resolved different run dirs ({', '.join(run_dirs)}); give run_dir=... "
                       "explicitly when training with several processes")
    return group


def train_app(cfg: DictConfig) -> int:
    """Run the whole pipeline; see the module docstring."""
    import torch

    from robot_learn.cli.tasks import check_task, fit_policy_to_task, video_cameras
    from robot_learn.data import WindowSampler
    from robot_learn.evaluation import evaluate, write_report
    from robot_learn.training import Trainer, build_policy_for_view, rank_seed
    from robot_learn.training.encoder_finetune import finetune_frame_encoder, finetune_steps

    t0 = time.perf_counter()
    task = check_task(cfg.task.name)
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    policy_choice = HydraConfig.get().runtime.choices.get("policy", "?")
    print(f"run dir: {run_dir}")

    # 0. Every setting is checked before any work, so a typo costs nothing.
    train_cfg = instantiate_node(cfg.train, "train", out_dir=str(run_dir))
    device_setting(cfg, "train.device")
    policy_config = fit_policy_to_task(instantiate_node(cfg.policy, "policy"), task)
    policy_name = policy_name_for_config(policy_config)
    check_policy_size(policy_name, policy_config)
    final_eval = eval_settings(cfg, "eval.")
    periodic_episodes = setting(cfg, "eval.periodic_episodes", int, minimum=1) if train_cfg.eval_every else 0
    resume_from = check_resume(train_cfg)
    memory = sampler_memory(cfg)  # data.cache_gb, data.windows_per_frame

    # 1. Demonstrations. Under torchrun every rank runs this command: rank 0 collects
    # missing demos while the others wait, so they are collected once.
    group = join_ranks(train_cfg, run_dir)
    if group.is_main:
        demos = ensure_demos(cfg, task)
    group.barrier()
    if not group.is_main:
        demos = ensure_demos(cfg, task)

    # 2. Policy and sampler (train.num_threads also covers the frame encoder's pretraining).
    if train_cfg.num_threads:
        torch.set_num_threads(train_cfg.num_threads)
    check_store_fits_policy(demos, policy_config, cfg.data.path)
    # Pixel presets: a pretrained frame encoder, and its features cached in the store;
    # rank 0 pretrains and caches, the other ranks then load both.
    def frame_features() -> tuple[Any, Any, dict]:
        try:  # a store without the cameras, another resolution, an unloadable encoder: one line
            return prepare_frame_features(policy_config, demos, task, cfg.data.path, device=str(cfg.train.device))
        except ValueError as exc:
            raise CLIError(str(exc)) from None

    if group.is_main:
        prepared = frame_features()
    group.barrier()
    if not group.is_main:
        prepared = frame_features()
    policy_config, encoder, derived = prepared
    policy = build_policy_for_view(policy_config, demos, derived, name=policy_name)
    if encoder is not None:
        policy.frame_encoder.load_state_dict(encoder.state_dict())
    sampler = WindowSampler(demos, obs_keys=policy.training_obs_keys, obs_horizon=policy.obs_horizon,
                            action_horizon=policy.action_horizon, batch_size=train_cfg.batch_size,
                            seed=rank_seed(int(cfg.data.sampler_seed)), derived=derived,
                            **memory)
    n_params = sum(p.numel() for p in policy.parameters())
    print(f"[2/4] {policy_choice}: {n_params / 1e6:.2f} M parameters, "
          f"{demos.num_episodes} demos, obs {list(policy.obs_shapes)}")

    def periodic_eval(ema_policy: Any, step: int) -> dict[str, float]:
        result = evaluate(ema_policy, task, **{**final_eval.evaluate_kwargs(), "episodes": periodic_episodes,
                                               "videos": 0})
        s = result.summary
        return {"success_rate": s.success_rate, "mean_progress": s.mean_progress}

    # 3. Training.
    if resume_from is None:
        print(f"[3/4] training {train_cfg.steps} steps, batch {train_cfg.batch_size}")
    else:
        print(f"[3/4] resuming from step {resume_from} of run_dir {run_dir}: training to step "
              f"{train_cfg.steps}, batch {train_cfg.batch_size}")
    trainer = Trainer(policy, sampler, train_cfg,
                      evaluate_fn=periodic_eval if train_cfg.eval_every else None)
    fit = trainer.fit()
    if steps := finetune_steps(policy):  # the pixel presets' optional end-to-end phase
        print(f"      fine-tuning the frame encoder end to end for {steps} steps on raw frames")
        trainer, tuned = finetune_frame_encoder(trainer, demos, derived, train_cfg,
                                                rank_seed(int(cfg.data.sampler_seed) + 1), memory)
        fit = {**fit, "final_policy_dir": tuned["final_policy_dir"], "finetune_time": tuned["time"],
               "finetune_loss": tuned["loss"]}
    group.close()
    if not group.is_main:
        return 0  # rank 0 evaluates and writes the report

    # 4. Final evaluation of the EMA policy on held-out seeds, and the report.
    print(f"[4/4] evaluating the EMA policy on {final_eval.episodes} held-out episodes")
    result = evaluate(trainer.ema_policy, task, out_dir=run_dir, progress_bar=True,
                      **final_eval.evaluate_kwargs(), **video_cameras(task))
    paths = write_report(result, run_dir, title=f"robot-learn train: {task}, {policy_choice}", extra={
        "policy": {"type": policy_name, "preset": policy_choice, "parameters": n_params,
                   "dir": fit["final_policy_dir"]},
        "train": {k: v for k, v in fit.items() if k != "final_policy_dir"},
        "data": {"path": str(cfg.data.path), "episodes": demos.num_episodes,
                 "frames": int(sum(demos.store.episode_ends[demos.episodes]
                                   - demos.store.episode_starts[demos.episodes]))},
        "total_time_s": time.perf_counter() - t0,
        "config": OmegaConf.to_container(cfg, resolve=True),
    })
    s = result.summary
    print(f"\n{task} / {policy_choice}: {s.describe()}; "
          + (f"{result.diverged_episodes} ended by a diverged simulation; " if result.diverged_episodes else "")
          + f"train {fit['time']:.0f} s, total {time.perf_counter() - t0:.0f} s")
    print(f"report: {paths['markdown']}")
    return 0


def main(argv: Sequence[str]) -> int:
    """Entry point for ``robot-learn train``."""
    return run_hydra_app(train_app, "train", argv, "robot-learn train")
