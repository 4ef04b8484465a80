"""``robot-learn collect``: record scripted expert demos (Hydra app, config collect.yaml)."""

from __future__ import annotations

from typing import Sequence

from omegaconf import DictConfig

from robot_learn.cli.hydra_app import run_hydra_app
from robot_learn.cli.settings import env_conditions, setting


def collect_app(cfg: DictConfig) -> int:
    """Collect ``cfg.episodes`` expert episodes into ``cfg.out``."""
    from robot_learn.envs.demos import collect_demos
    from robot_learn.cli.tasks import check_task

    summary = collect_demos(
        check_task(cfg.task.name), setting(cfg, "episodes", int, minimum=1), cfg.out,
        noise=setting(cfg, "noise", float, minimum=0), seed=setting(cfg, "seed", int, minimum=0),
        cameras=list(cfg.cameras or []), image_size=setting(cfg, "image_size", int, minimum=1),
        max_steps=setting(cfg, "max_steps", int, minimum=1, optional=True),
        keep_failures=setting(cfg, "keep_failures", bool), source=cfg.source,
        wait=cfg.wait, to_rest=setting(cfg, "to_rest", bool), conditions=env_conditions(cfg),
        workers=setting(cfg, "workers", int, minimum=1, optional=True))
    print(f"collected {summary.attempted} episodes of '{cfg.task.name}': "
          f"{summary.successes} succeeded, {summary.stored} stored in {summary.path}")
    return 0


def main(argv: Sequence[str]) -> int:
    """Entry point for ``robot-learn collect``."""
    return run_hydra_app(collect_app, "collect", argv, "robot-learn collect")
