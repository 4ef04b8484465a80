"""``robot-learn wm train|eval|rollout``: video world models (Hydra apps, configs wm_*.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from omegaconf import DictConfig, OmegaConf

from robot_learn.cli.errors import CLIError
from robot_learn.cli.hydra_app import run_hydra_app
from robot_learn.cli.settings import setting

from robot_learn.world_models.checkpoint import RUN_CONFIG, run_settings


def world_model_config(cfg: DictConfig, task: str):
    """The ``world_model`` group as a checked WorldModelConfig for ``task``."""
    from robot_learn.world_models import WorldModelConfig, task_suite

    values = OmegaConf.to_container(cfg.world_model, resolve=True)
    values.update(task=task, suite=task_suite(task))
    try:
        return WorldModelConfig(**values)
    except TypeError as err:
        raise CLIError(f"world_model: {err}") from None
    except ValueError as err:
        raise CLIError(f"world_model.{err}" if " must " in str(err).split(";")[0] else f"world_model: {err}") from None


def train_app(cfg: DictConfig) -> int:
    """Collect the store if missing, train, save the EMA model and score it on held-out episodes."""
    from hydra.core.hydra_config import HydraConfig

    from robot_learn.cli.tasks import check_task
    from robot_learn.training import TrainConfig

    task = check_task(cfg.task.name)
    config = world_model_config(cfg, task)
    held_out = setting(cfg, "data.held_out", int, minimum=1)
    episodes = setting(cfg, "data.episodes", int, minimum=held_out + 1)
    judge_steps = setting(cfg, "success_model.steps", int, minimum=0)
    judge_frames = setting(cfg, "success_model.success_frames", int, minimum=1)
    try:
        train = TrainConfig(**OmegaConf.to_container(cfg.train, resolve=True))
    except (TypeError, ValueError) as err:
        raise CLIError(f"train: {err}") from None
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    train.out_dir = str(run_dir)
    store = Path(cfg.data.path)
    if not store.exists():
        from robot_learn.envs.demos import collect_demos, staged_store

        print(f"collecting {episodes} {task} episodes into {store}")
        with staged_store(store) as staging:
            collect_demos(task, episodes, staging, noise=float(cfg.data.noise), seed=int(cfg.data.seed),
                          cameras=config.cameras, image_size=config.image_size, keep_failures=True)
    from robot_learn.world_models.training import train_world_model

    (run_dir / RUN_CONFIG).write_text(OmegaConf.to_yaml(cfg, resolve=True))
    model, metrics = train_world_model(store, config, train, held_out=held_out)
    print(f"world model: {metrics['step']} steps in {metrics['time']:.0f} s, final loss {metrics['loss']:.5f}; "
          f"saved to {metrics['final_policy_dir']}")
    if judge_steps:
        _train_judge(store, held_out, config.camera, judge_steps, judge_frames, run_dir / "success_model",
                     train.progress_bar)
    return _fidelity(model, store, held_out, run_dir / "fidelity", horizon=20, stride=10, seed=0,
                     title=f"{task} world model ({run_dir.name})")


def _train_judge(store_path: Path, held_out: int, camera: str, steps: int, success_frames: int,
                 out_dir: Path, progress_bar: bool) -> None:
    """The learned success model, on the world model's training episodes (``wm rollout scorer=DIR``)."""
    import time

    from robot_learn.data import EpisodeStore
    from robot_learn.world_models.success_model import train_success_model
    from robot_learn.world_models.training import split_store

    start = time.perf_counter()
    with EpisodeStore.open(store_path, mode="r") as store:
        train_success_model(split_store(store, held_out).train, camera, steps=steps,
                            success_frames=success_frames, progress_bar=progress_bar).save(out_dir)
    print(f"success model: {steps} steps in {time.perf_counter() - start:.0f} s; saved to {out_dir} "
          f"(use it with wm rollout scorer={out_dir})")


def _fidelity(model, store_path: Path, held_out: int, out_dir: Path, *, horizon: int, stride: int,
              seed: int, title: str) -> int:
    from robot_learn.data import EpisodeStore
    from robot_learn.world_models.fidelity import measure_fidelity_per_camera, write_fidelity_report
    from robot_learn.world_models.training import check_store_fits, split_store

    cameras = model.config.cameras
    with EpisodeStore.open(store_path, mode="r") as store:
        check_store_fits(store, model.config)
        reports = measure_fidelity_per_camera(model, split_store(store, held_out).held_out, horizon=horizon,
                                              stride=stride, seed=seed)
    for camera, report in reports.items():  # the first camera's report in out_dir, any other's in out_dir/<camera>
        paths = write_fidelity_report(report, out_dir if camera == cameras[0] else out_dir / camera,
                                      f"{title}, {camera} camera" if len(cameras) > 1 else title,
                                      extra={"store": str(store_path), "held_out": held_out, "camera": camera})
        for h in sorted({0, 4, 9, horizon - 1} & set(range(horizon))):
            print(f"{camera} step {h + 1:>2}: PSNR {report.model_psnr[h]:.2f} dB (copy-last "
                  f"{report.copy_last_psnr[h]:.2f}), SSIM {report.model_ssim[h]:.3f} (copy-last "
                  f"{report.copy_last_ssim[h]:.3f}), moved pixels {report.model_psnr_moved[h]:.2f} dB "
                  f"(copy-last {report.copy_last_psnr_moved[h]:.2f})")
        print(f"{camera}: beats copy-last at {sum(report.beats_copy_last('psnr'))}/{horizon} steps on PSNR, "
              f"{sum(report.beats_copy_last('ssim'))}/{horizon} on SSIM; report: {paths['markdown']}")
    return 0


def eval_app(cfg: DictConfig) -> int:
    """Fidelity report of a saved world model: PSNR/SSIM per step against copy-last-frame."""
    from robot_learn.world_models import load_world_model

    checkpoint = setting(cfg, "checkpoint", str)
    horizon = setting(cfg, "horizon", int, minimum=1)
    stride = setting(cfg, "stride", int, minimum=1)
    floor = setting(cfg, "change_floor", float, optional=True)
    if floor is not None and not 0 <= floor < 255:
        raise CLIError(f"change_floor must be in [0, 255) pixel levels or null, got {floor}")
    run = run_settings(checkpoint)
    store = setting(cfg, "store", str, optional=True) or (run.get("data") or {}).get("path")
    held_out = setting(cfg, "held_out", int, minimum=1, optional=True) or (run.get("data") or {}).get("held_out")
    if not store or not held_out:
        raise CLIError(f"checkpoint {checkpoint} is not in a wm train run dir; give store=... and held_out=...")
    if not Path(store).exists():
        raise CLIError(f"store '{store}' does not exist")
    model = load_world_model(checkpoint)
    if floor is not None:
        model.config.change_floor = floor
    out_dir = Path(cfg.out_dir) if cfg.out_dir else Path(checkpoint) / "fidelity"
    return _fidelity(model, Path(store), int(held_out), out_dir, horizon=horizon, stride=stride,
                     seed=int(cfg.seed), title=f"{model.config.task} world model {checkpoint}")


def rollout_app(cfg: DictConfig) -> int:
    """Roll a saved policy out in a world model; finished episodes go to ``out`` as synthetic
    data. ``workers`` > 1 splits the seeds over Ray workers writing through one writer."""
    from robot_learn.policies import load_policy
    from robot_learn.world_models import load_world_model
    from robot_learn.world_models.env import check_start
    from robot_learn.world_models.rollout import (check_policy_fits, generate_rollouts, rollout_env,
                                                  rollout_starts, task_spaces)

    checkpoint = setting(cfg, "checkpoint", str)
    policy_dir = setting(cfg, "policy_dir", str)
    episodes = setting(cfg, "episodes", int, minimum=1)
    workers = setting(cfg, "workers", int, minimum=1)
    out = setting(cfg, "out", str)
    scorer = setting(cfg, "scorer", str)
    try:
        start = check_start(setting(cfg, "start", str))
        store_path = rollout_starts(checkpoint, setting(cfg, "store", str, optional=True), scorer)
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    model = load_world_model(checkpoint)
    policy = load_policy(policy_dir)
    check_policy_fits(policy, model, int(task_spaces(model.config.task)[0].shape[0]))  # before anything is written
    max_steps = setting(cfg, "max_steps", int, minimum=1, optional=True)
    videos = setting(cfg, "videos", int, minimum=0)
    settings = dict(seed=int(cfg.seed), policy_id=str(policy_dir), round_index=int(cfg.round))
    if workers > 1:
        from robot_learn.fleet import start_ray
        from robot_learn.fleet.parallel_jobs import generate_rollouts_on_ray

        start_ray(address=cfg.get("address") or None)
        summary = generate_rollouts_on_ray(policy, checkpoint, store_path, episodes, out, workers,
                                           max_steps=max_steps, scorer=scorer, start=start, **settings)
        if videos:
            print("videos are made with workers=1 only; none made")
    else:
        with rollout_env(model, store_path, max_steps, scorer, start) as env:
            summary = generate_rollouts(policy, env, episodes, out, videos=videos, video_dir=cfg.video_dir,
                                        **settings)
    for line in summary.stopped:
        print(f"stopped, not written: {line}")
    for video in summary.videos:
        print(f"video: {video.describe()}")
    print(f"{summary.written} synthetic episodes written to {out} ({summary.successes} judged successful); "
          f"{len(summary.stopped)} stopped")
    return 0


APPS = {"train": (train_app, "wm_train"), "eval": (eval_app, "wm_eval"), "rollout": (rollout_app, "wm_rollout")}


def main(argv: Sequence[str]) -> int:
    """Entry point for ``robot-learn wm <train|eval|rollout> key=value ...``."""
    from robot_learn.cli.errors import run_command

    if not argv or argv[0] not in APPS:
        def refuse(_: Sequence[str]) -> int:
            got = f"'{argv[0]}'" if argv else "nothing"
            raise CLIError(f"unknown wm command {got}; valid: {', '.join(APPS)}")
        return run_command("robot-learn wm", refuse, argv)
    fn, config_name = APPS[argv[0]]
    return run_hydra_app(fn, config_name, argv[1:], f"robot-learn wm {argv[0]}")
