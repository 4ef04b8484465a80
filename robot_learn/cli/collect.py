"""``robot-learn collect``: record scripted expert demos (Hydra app, config collect.yaml)."""

from __future__ import annotations

from typing import Sequence

from omegaconf import DictConfig

from robot_learn.cli.hydra_app import run_hydra_app


def collect_app(cfg: DictConfig) -> int:
    """Collect ``cfg.episodes`` expert episodes into ``cfg.out``."""
    from robot_learn.cli.demos import collect_demos
    from robot_learn.cli.tasks import check_task

    summary = collect_demos(
        check_task(cfg.task.name), int(cfg.episodes), cfg.out, noise=float(cfg.noise),
        seed=int(cfg.seed), cameras=list(cfg.cameras or []), image_size=int(cfg.image_size),
        max_steps=cfg.max_steps, keep_failures=bool(cfg.keep_failures), source=cfg.source,
        wait=cfg.wait)
    print(f"collected {summary.attempted} episodes of '{cfg.task.name}': "
          f"{summary.successes} succeeded, {summary.stored} stored in {summary.path}")
    return 0


def main(argv: Sequence[str]) -> int:
    """Entry point for ``robot-learn collect``."""
    return run_hydra_app(collect_app, "collect", argv, "robot-learn collect")
