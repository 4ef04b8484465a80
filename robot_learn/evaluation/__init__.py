"""Evaluation: vectorised rollouts on held-out seeds, metrics with Wilson intervals,
videos, reports and plots."""

from robot_learn.evaluation.metrics import SuccessSummary, summarize, wilson_interval
from robot_learn.evaluation.plots import plot_success_per_task
from robot_learn.evaluation.report import build_report, render_markdown, write_report
from robot_learn.evaluation.results import EpisodeResult, EvalResult
from robot_learn.evaluation.rollout import (EVAL_SEED, evaluate, make_vector_env, observation_shapes,
                                            policy_cameras)
from robot_learn.evaluation.videos import tile_cameras, write_video

__all__ = [
    "EVAL_SEED", "EpisodeResult", "EvalResult", "SuccessSummary", "build_report",
    "evaluate", "make_vector_env", "observation_shapes", "plot_success_per_task", "policy_cameras",
    "render_markdown", "summarize", "tile_cameras", "wilson_interval", "write_report",
    "write_video",
]
