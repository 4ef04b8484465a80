"""Metric sinks for training: ``metrics.csv``, TensorBoard and (optionally) wandb."""

from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import Any

from torch.utils.tensorboard import SummaryWriter

CSV_FILENAME = "metrics.csv"
TENSORBOARD_DIRNAME = "tensorboard"
_FIRST_COLUMNS = ["step", "loss", "lr", "time"]


class MetricsLogger:
    """Writes one row per logged step to CSV and scalars to TensorBoard/wandb.

    The CSV header is ``step, loss, lr, time`` followed by any other metric seen so
    far (eval metrics appear when first logged; the file is rewritten with the
    wider header then). On resume from step ``s``, rows after ``s`` written by the
    killed run are dropped, and TensorBoard purges its events after ``s``.
    """

    def __init__(
        self,
        out_dir: str | os.PathLike,
        resume_step: int = 0,
        use_wandb: bool = False,
        wandb_project: str = "robot-learn",
        run_config: dict[str, Any] | None = None,
    ) -> None:
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.csv_path = self.out_dir / CSV_FILENAME
        self._rows: list[dict[str, Any]] = []
        self._columns = list(_FIRST_COLUMNS)
        if resume_step > 0 and self.csv_path.exists():
            with open(self.csv_path, newline="") as f:
                reader = csv.DictReader(f)
                self._columns = list(reader.fieldnames or _FIRST_COLUMNS)
                self._rows = [r for r in reader if r.get("step") and int(r["step"]) <= resume_step]
        self._rewrite_csv()
        self._tb = SummaryWriter(
            log_dir=str(self.out_dir / TENSORBOARD_DIRNAME), purge_step=resume_step if resume_step > 0 else None
        )
        self._wandb = None
        if use_wandb:
            try:
                import wandb  # optional dependency
            except ImportError as exc:
                raise ImportError("wandb=true needs the 'wandb' package: pip install wandb") from exc
            self._wandb = wandb.init(project=wandb_project, config=run_config, dir=str(self.out_dir), resume="allow")

    def _rewrite_csv(self) -> None:
        tmp = self.csv_path.with_suffix(".csv.tmp")
        with open(tmp, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=self._columns)
            writer.writeheader()
            writer.writerows(self._rows)
        os.replace(tmp, self.csv_path)

    def log(self, step: int, metrics: dict[str, float]) -> None:
        """Record ``metrics`` at ``step`` in every sink."""
        row = {"step": step, **metrics}
        new_columns = [k for k in row if k not in self._columns]
        self._rows.append(row)
        if new_columns:
            self._columns.extend(new_columns)
            self._rewrite_csv()
        else:
            with open(self.csv_path, "a", newline="") as f:
                csv.DictWriter(f, fieldnames=self._columns).writerow(row)
        for key, value in metrics.items():
            if key != "time":
                self._tb.add_scalar(key, value, step)
        if self._wandb is not None:
            self._wandb.log(metrics, step=step)

    def flush(self) -> None:
        self._tb.flush()

    def close(self) -> None:
        self._tb.close()
        if self._wandb is not None:
            self._wandb.finish()
            self._wandb = None
