"""report.json / report.md / success_per_task.png."""

import json

import matplotlib.image as mpimg
import pytest

from robot_learn.evaluation import EpisodeResult, EvalResult, wilson_interval, write_report


def _result(task, outcomes):
    eps = [EpisodeResult(seed=1_000_000 + i, success=ok, progress=1.0 if ok else 0.3,
                         length=20 if ok else 100) for i, ok in enumerate(outcomes)]
    return EvalResult(task=task, episodes=eps, wall_time_s=1.5, info={"workers": 2})


def test_report_json_has_metrics_episodes_and_extra_fields(tmp_path):
    paths = write_report(_result("stack", [True, True, False, True]), tmp_path,
                         extra={"policy": {"type": "diffusion"}, "checkpoint": "ckpt/"})
    report = json.loads(paths["json"].read_text())
    task = report["tasks"]["stack"]
    assert task["episodes"] == 4 and task["successes"] == 3
    assert task["success_rate"] == 0.75
    assert [task["ci_low"], task["ci_high"]] == pytest.approx(list(wilson_interval(3, 4)))
    assert task["mean_progress"] == pytest.approx((3 + 0.3) / 4)
    assert task["mean_length"] == pytest.approx(40.0)
    assert [e["seed"] for e in task["per_episode"]] == [1_000_000 + i for i in range(4)]
    assert report["overall"]["success_rate"] == 0.75
    assert report["policy"] == {"type": "diffusion"} and report["checkpoint"] == "ckpt/"


def test_extra_fields_cannot_overwrite_metrics(tmp_path):
    paths = write_report(_result("stack", [True]), tmp_path, extra={"overall": "bogus"})
    assert json.loads(paths["json"].read_text())["overall"]["success_rate"] == 1.0


def test_markdown_table_has_one_row_per_task_and_an_overall_row(tmp_path):
    paths = write_report([_result("stack", [True, False]), _result("unstack", [True] * 3)],
                         tmp_path)
    md = paths["markdown"].read_text()
    rows = [line for line in md.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(rows) == 4  # header, stack, unstack, overall
    assert "| stack | 2 | 50.0% (1/2)" in md
    assert "| unstack | 3 | 100.0% (3/3)" in md
    assert "**overall** | 5 | 80.0% (4/5)" in md


@pytest.mark.parametrize("tasks", [["stack"], ["stack", "unstack", "peg_insert", "bin_take"]])
def test_plot_is_a_png_for_one_or_many_tasks(tmp_path, tasks):
    paths = write_report([_result(t, [True, False, i % 2 == 0]) for i, t in enumerate(tasks)],
                         tmp_path)
    image = mpimg.imread(paths["plot"])
    assert image.ndim == 3 and image.shape[0] > 100 and image.shape[1] > 100
    # A chart, not a blank canvas.
    assert image[..., :3].std() > 0.05


def test_write_report_rejects_empty_results(tmp_path):
    with pytest.raises(ValueError, match="at least one"):
        write_report([], tmp_path)


def test_peak_progress_is_reported_when_every_episode_recorded_it(tmp_path):
    """Diffusion Policy's PushT score is the best coverage during an episode: the report carries
    its mean beside the final progress, and leaves it out (None, '-') for episodes without it."""
    eps = [EpisodeResult(seed=i, success=False, progress=0.2, length=300, peak_progress=peak)
           for i, peak in enumerate([0.9, 0.5])]
    paths = write_report(EvalResult(task="pusht", episodes=eps), tmp_path / "peak")
    report = json.loads(paths["json"].read_text())
    assert report["tasks"]["pusht"]["mean_peak_progress"] == pytest.approx(0.7)
    assert report["overall"]["mean_peak_progress"] == pytest.approx(0.7)
    assert "| 0.200 | 0.700 | 300.0 |" in paths["markdown"].read_text()
    assert "mean progress 0.200 (peak 0.700)" in EvalResult(task="pusht", episodes=eps).summary.describe()

    old = write_report(_result("stack", [True, False]), tmp_path / "old")
    assert json.loads(old["json"].read_text())["overall"]["mean_peak_progress"] is None
    assert "| 0.650 | - | 60.0 |" in old["markdown"].read_text()
