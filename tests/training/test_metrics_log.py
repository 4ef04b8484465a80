"""metrics.csv and TensorBoard logging, including what happens on resume."""

import csv
import importlib.util

import pytest

from robot_learn.training import MetricsLogger


def _rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def test_csv_starts_with_step_loss_lr_time_and_widens_when_eval_metrics_appear(tmp_path):
    log = MetricsLogger(tmp_path)
    log.log(10, {"loss": 1.0, "lr": 1e-4, "time": 1.5})
    log.log(20, {"eval/success_rate": 0.5})
    log.log(20, {"loss": 0.5, "lr": 5e-5, "time": 3.0})
    log.close()
    with open(tmp_path / "metrics.csv") as f:
        assert f.readline().strip() == "step,loss,lr,time,eval/success_rate"
    rows = _rows(tmp_path / "metrics.csv")
    assert [(r["step"], r["loss"], r["eval/success_rate"]) for r in rows] == [("10", "1.0", ""), ("20", "", "0.5"), ("20", "0.5", "")]
    assert any((tmp_path / "tensorboard").iterdir())


def test_resuming_drops_rows_the_killed_run_logged_after_the_checkpoint(tmp_path):
    log = MetricsLogger(tmp_path)
    for step in (10, 20, 30):
        log.log(step, {"loss": float(step), "lr": 0.1, "time": 0.0})
    log.close()
    resumed = MetricsLogger(tmp_path, resume_step=20)
    resumed.log(30, {"loss": 99.0, "lr": 0.1, "time": 0.0})
    resumed.close()
    assert [(r["step"], r["loss"]) for r in _rows(tmp_path / "metrics.csv")] == [("10", "10.0"), ("20", "20.0"), ("30", "99.0")]


@pytest.mark.skipif(importlib.util.find_spec("wandb") is not None, reason="wandb is installed here")
def test_wandb_on_without_the_package_says_how_to_install_it(tmp_path):
    with pytest.raises(ImportError, match="wandb=true needs the 'wandb' package: pip install wandb"):
        MetricsLogger(tmp_path, use_wandb=True)
