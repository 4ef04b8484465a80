"""Evaluation: vectorised rollouts on held-out seeds, metrics with Wilson intervals,
videos, reports and plots.

Names are imported lazily (PEP 562) so that light users, such as
``robot-learn render-episode`` needing only the video writer, do not pay for
importing torch, diffusers and gymnasium.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "SuccessSummary": "metrics", "summarize": "metrics", "wilson_interval": "metrics",
    "alpha_sweep": "merge_sweep", "plot_success_per_task": "plots",
    "build_report": "report", "render_markdown": "report", "write_report": "report",
    "EpisodeResult": "results", "EvalResult": "results", "summarize_episodes": "results",
    "build_suite_table": "suite_table", "suite_row": "suite_table", "write_suite_table": "suite_table",
    "EVAL_SEED": "rollout", "evaluate": "rollout", "make_vector_env": "rollout",
    "observation_shapes": "rollout", "policy_cameras": "rollout",
    "tile_cameras": "videos", "write_video": "videos",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'robot_learn.evaluation' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"robot_learn.evaluation.{_EXPORTS[name]}"), name)
    globals()[name] = value  # cache: later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
