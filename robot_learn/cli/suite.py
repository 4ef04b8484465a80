"""``robot-learn suite tasks=[A,B,...] [out=DIR] [train overrides...]``: train and evaluate
our policy on each task, then write one table (suite.json, suite.md).

Reads in the order it runs:
1. check every task name and compose the train config of every task with the overrides,
   so that a typo is one line before anything runs or is written;
2. per task, ``robot-learn train task=T run_dir=OUT/T <overrides>`` in a process of its
   own (a crash or a leaked renderer stays in that task; its output goes to OUT/T.log);
3. after each task, rewrite the table from the finished runs' report.json
   (:mod:`robot_learn.evaluation.suite_table`), so an interrupted suite keeps its rows.

Any ``robot-learn train`` override applies to every task, e.g.
``robot-learn suite tasks=[metaworld/drawer-close,metaworld/window-open] policy=diffusion_state
data.episodes=30 train.steps=2000 train.num_threads=1 eval.episodes=30``.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Sequence

from robot_learn.cli.errors import CLIError, run_command
from robot_learn.cli.hydra_app import CONFIG_PATH

USAGE = "robot-learn suite tasks=[TASK,...] [out=DIR] [robot-learn train overrides ...]"
OWNED_KEYS = ("task", "run_dir", "hydra.run.dir")  # the suite sets these per task


def parse_suite_args(argv: Sequence[str]) -> tuple[list[str], Path, list[str]]:
    """(tasks, out dir, train overrides) from ``argv``; CLIError names what is wrong."""
    tasks: list[str] | None = None
    out = Path(f"outputs/suite/{time.strftime('%Y%m%d_%H%M%S')}")
    overrides = []
    for arg in argv:
        key, sep, value = arg.partition("=")
        if not sep:
            raise CLIError(f"expected key=value, got {arg!r}; usage: {USAGE}")
        if key == "tasks":
            tasks = [t.strip() for t in value.strip().removeprefix("[").removesuffix("]").split(",") if t.strip()]
        elif key == "out":
            out = Path(value)
        elif key.lstrip("+~") in OWNED_KEYS:
            raise CLIError(f"{key} is set by the suite for each task; give tasks=[...] and out=DIR instead")
        else:
            overrides.append(arg)
    if not tasks:
        raise CLIError(f"missing required setting tasks, e.g. tasks=[metaworld/drawer-close,metaworld/window-open]; "
                       f"usage: {USAGE}")
    if len(set(tasks)) != len(tasks):
        raise CLIError(f"tasks lists a task twice: {tasks}")
    return tasks, out, overrides


def check_suite(tasks: Sequence[str], overrides: Sequence[str], out: Path) -> None:
    """Every task known, the overrides valid for each, and ``out`` new or empty."""
    from hydra import compose, initialize_config_dir

    from robot_learn.cli.tasks import check_task, register_external_task_configs

    for task in tasks:
        check_task(task)
    register_external_task_configs([f"task={t}" for t in tasks], CONFIG_PATH)
    with initialize_config_dir(config_dir=CONFIG_PATH, version_base="1.3"):
        for task in tasks:
            compose("train", overrides=[f"task={task}", *overrides])
    if out.exists() and any(out.iterdir()):
        raise CLIError(f"out dir {out} is not empty; give a new out=DIR")


def train_one(task: str, run_dir: Path, overrides: Sequence[str]) -> tuple[dict | None, str | None]:
    """Run ``robot-learn train`` for ``task`` into ``run_dir``; (its report, None) or (None, the error)."""
    log = run_dir.with_suffix(".log")
    command = [sys.executable, "-m", "robot_learn.cli.main", "train", f"task={task}", f"run_dir={run_dir}",
               *overrides]
    with log.open("w") as f:
        code = subprocess.run(command, stdout=f, stderr=subprocess.STDOUT).returncode
    report = run_dir / "report.json"
    if code == 0 and report.is_file():
        return json.loads(report.read_text()), None
    lines = [ln for ln in log.read_text().splitlines() if ln.strip()]
    return None, f"exit status {code}: {lines[-1] if lines else 'no output'} (log {log})"


def suite(argv: list[str]) -> int:
    """Run the suite; see the module docstring."""
    from robot_learn.evaluation.suite_table import suite_row, write_suite_table

    if any(a in ("-h", "--help") for a in argv):
        print(f"usage: {USAGE}\n\n{__doc__}")
        return 0
    tasks, out, overrides = parse_suite_args(argv)
    check_suite(tasks, overrides, out)
    out.mkdir(parents=True, exist_ok=True)
    extra = {"command": shlex.join(["robot-learn", "suite", *argv]), "tasks": tasks, "overrides": overrides}
    rows, paths = [], {}
    for i, task in enumerate(tasks, 1):
        run_dir = out / task.replace("/", "_")
        print(f"[{i}/{len(tasks)}] {task}: training and evaluating in {run_dir}", flush=True)
        report, error = train_one(task, run_dir, overrides)
        rows.append(suite_row(task, report, run_dir, error))
        r = rows[-1]
        print(f"      failed, {error}" if error else
              f"      success {r['success_rate']:.1%} ({r['successes']}/{r['episodes']}), "
              f"95% CI [{r['ci_low']:.1%}, {r['ci_high']:.1%}]; train {r['train_s']:.0f} s, "
              f"eval {r['eval_s']:.0f} s", flush=True)
        paths = write_suite_table(rows, out, extra, title=f"robot-learn suite: {len(tasks)} tasks")
    print(f"table: {paths['markdown']}")
    failed = [r["task"] for r in rows if "error" in r]
    if failed:
        print(f"{len(failed)} task(s) failed: {', '.join(failed)}; see their logs", file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str]) -> int:
    """Entry point for ``robot-learn suite``."""
    return run_command("robot-learn suite", suite, argv)
