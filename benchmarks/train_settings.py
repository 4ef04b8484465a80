"""The training settings ``robot-learn train`` uses (``configs/train/default.yaml``) as a
``TrainConfig``, for benchmarks that train in process. The dataclass's own defaults
(lr 1e-4, no warm-up) learn about 10x slower on these tasks than the CLI's lr 1e-3."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def cli_train_config(**overrides: Any):
    """``configs/train/default.yaml``'s ``TrainConfig`` with ``overrides`` on top."""
    from omegaconf import OmegaConf

    from robot_learn.training import TrainConfig

    settings = OmegaConf.to_container(OmegaConf.load(Path(__file__).parents[1] / "configs/train/default.yaml"))
    settings.pop("_target_")
    return TrainConfig(**{**settings, **overrides})
