"""The suite table: a row per task from its train report, Wilson intervals from the
evaluation code, a pooled row over the finished tasks, failed runs shown as such."""

import json

import pytest

from robot_learn.evaluation import EpisodeResult, EvalResult, build_report, wilson_interval
from robot_learn.evaluation.suite_table import build_suite_table, render_suite_markdown, suite_row, \
    write_suite_table


def train_report(task: str, wins: int, episodes: int, train_s: float, eval_s: float, total_s: float) -> dict:
    """A report shaped as ``robot-learn train`` writes it (build_report plus its extra keys)."""
    result = EvalResult(task, [EpisodeResult(seed=1_000_000 + i, success=i < wins, progress=1.0 if i < wins else 0.2,
                                             length=50) for i in range(episodes)], wall_time_s=eval_s)
    return build_report([result], extra={"train": {"step": 2000, "time": train_s}, "data": {"episodes": 30},
                                         "total_time_s": total_s})


def test_a_row_reads_success_interval_and_times_from_the_report():
    row = suite_row("metaworld/reach", train_report("metaworld/reach", 27, 30, 300.0, 40.0, 400.0), "out/r")
    assert (row["successes"], row["episodes"], row["demos"], row["train_steps"]) == (27, 30, 30, 2000)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx(wilson_interval(27, 30))
    assert (row["train_s"], row["eval_s"], row["other_s"], row["total_s"]) == pytest.approx((300, 40, 60, 400))


def test_the_pooled_row_counts_every_finished_episode_and_skips_failed_runs():
    rows = [suite_row("a", train_report("a", 30, 30, 100.0, 10.0, 120.0), "out/a"),
            suite_row("b", train_report("b", 6, 20, 200.0, 20.0, 230.0), "out/b"),
            suite_row("c", None, "out/c", error="exit status 1: boom")]
    pooled = build_suite_table(rows)["pooled"]
    assert (pooled["tasks"], pooled["failed_tasks"], pooled["successes"], pooled["episodes"]) == (2, 1, 36, 50)
    assert (pooled["ci_low"], pooled["ci_high"]) == pytest.approx(wilson_interval(36, 50))
    assert pooled["mean_task_success_rate"] == pytest.approx((1.0 + 0.3) / 2)
    assert (pooled["train_s"], pooled["eval_s"]) == pytest.approx((300, 30))
    text = render_suite_markdown(build_suite_table(rows, {"command": "robot-learn suite tasks=[a,b,c]"}))
    assert "Command: `robot-learn suite tasks=[a,b,c]`" in text
    assert "| a | 100.0% (30/30) | [88.6%, 100.0%] | 1.00 | 30 | 2000 | 100 | 10 | 10 |" in text
    assert "| c | failed: exit status 1: boom |" in text
    assert "| **all 2 tasks (pooled)** | 72.0% (36/50) |" in text and "1 task(s) failed" in text


def test_write_puts_json_and_markdown_in_the_out_dir(tmp_path):
    rows = [suite_row("a", train_report("a", 1, 2, 1.0, 1.0, 3.0), "out/a")]
    paths = write_suite_table(rows, tmp_path / "suite", {"command": "x"})
    table = json.loads(paths["json"].read_text())
    assert table["command"] == "x" and table["rows"][0]["task"] == "a" and table["pooled"]["successes"] == 1
    assert paths["markdown"].read_text().startswith("# Suite\n")
