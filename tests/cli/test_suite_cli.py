"""``robot-learn suite``: train and evaluate on a list of tasks, one table; a task whose run
fails keeps its row; bad input is one line before anything is written."""

import json

import pytest

from robot_learn.evaluation import wilson_interval

TINY = ["train=fast", "data.episodes=1", "eval.episodes=2", "eval.max_steps=4", "eval.videos=0",
        "policy.down_dims=[16,32]", "policy.action_horizon=8", "policy.execute_horizon=4",
        "policy.num_inference_steps=2"]


def test_suite_trains_each_task_and_writes_one_table(run_cli, tmp_path):
    out = run_cli("suite", "tasks=[stack,unstack]", "out=s", *TINY, timeout=400)
    assert out.returncode == 0, out.stderr[-3000:]
    table = json.loads((tmp_path / "s" / "suite.json").read_text())
    assert table["command"].startswith("robot-learn suite 'tasks=[stack,unstack]' out=s train=fast")
    assert [r["task"] for r in table["rows"]] == ["stack", "unstack"]
    for row in table["rows"]:
        report = json.loads((tmp_path / "s" / row["task"] / "report.json").read_text())
        assert row["successes"] == report["tasks"][row["task"]]["successes"] and row["episodes"] == 2
        assert (row["ci_low"], row["ci_high"]) == pytest.approx(wilson_interval(row["successes"], 2))
        assert row["train_steps"] == 4 and row["train_s"] > 0 and row["eval_s"] > 0
        assert (tmp_path / "s" / f"{row['task']}.log").is_file()
    assert table["pooled"]["episodes"] == 4
    text = (tmp_path / "s" / "suite.md").read_text()
    assert "| stack |" in text and "| unstack |" in text and "**all 2 tasks (pooled)**" in text


def test_a_task_whose_run_fails_keeps_a_row_saying_why(run_cli, tmp_path):
    out = run_cli("suite", "tasks=[stack]", "out=s", "eval.episodes=0", timeout=200)
    assert out.returncode == 1
    assert "1 task(s) failed: stack" in out.stderr
    row = json.loads((tmp_path / "s" / "suite.json").read_text())["rows"][0]
    assert row["error"].startswith("exit status 2: robot-learn train: error: ")
    assert "eval.episodes" in row["error"] and "| stack | failed: exit status 2" in (tmp_path / "s" / "suite.md").read_text()


@pytest.mark.parametrize(("args", "message"), [
    ((), "missing required setting tasks, e.g. tasks=[metaworld/drawer-close,metaworld/window-open]"),
    (("tasks=[stack,stak]",), "unknown task 'stak'; valid tasks: stack, unstack"),
    (("tasks=[stack,stack]",), "tasks lists a task twice: ['stack', 'stack']"),
    (("tasks=[stack]", "task=unstack"), "task is set by the suite for each task"),
    (("tasks=[stack]", "run_dir=x"), "run_dir is set by the suite for each task"),
    (("tasks=[stack]", "train.stepz=3"), "Could not override 'train.stepz'"),
    (("tasks=[stack]", "policy=nope"), "Could not find 'policy/nope'"),
    (("tasks=[stack]", "steps"), "expected key=value, got 'steps'"),
])
def test_bad_suite_input_is_one_line_and_writes_nothing(user_error, tmp_path, args, message):
    assert message in user_error("suite", *args)
    assert list(tmp_path.iterdir()) == []


def test_a_suite_will_not_write_into_a_used_out_dir(user_error, tmp_path):
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "suite.json").write_text("{}")
    assert "out dir s is not empty; give a new out=DIR" in user_error("suite", "tasks=[stack]", "out=s")
