"""One table for a suite of training runs: a row per task read from its run's report.json
(as ``robot-learn train`` writes it), with success and its Wilson 95% interval and the
wall time of training, of the final evaluation and of the rest (demos, setup); a pooled
row over all tasks.

Written as ``suite.json`` and ``suite.md`` by :func:`write_suite_table`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, Sequence

from robot_learn.evaluation.metrics import wilson_interval

SUITE_VERSION = 1


def suite_row(task: str, report: Mapping[str, Any] | None, run_dir: str | Path, error: str | None = None
              ) -> dict[str, Any]:
    """The row of ``task`` from its train report (None with ``error`` when the run failed)."""
    row: dict[str, Any] = {"task": task, "run_dir": str(run_dir)}
    if report is None:
        return {**row, "error": error or "no report"}
    metrics, train = report["tasks"][task], report["train"]
    total_s, train_s, eval_s = report["total_time_s"], train["time"], metrics["wall_time_s"]
    return {**row, **{k: metrics[k] for k in ("episodes", "successes", "success_rate", "ci_low", "ci_high",
                                               "mean_progress")},
            "demos": report["data"]["episodes"], "train_steps": train["step"], "train_s": train_s,
            "eval_s": eval_s, "other_s": total_s - train_s - eval_s, "total_s": total_s}


def build_suite_table(rows: Sequence[Mapping[str, Any]], extra: Mapping[str, Any] | None = None
                      ) -> dict[str, Any]:
    """The table as a dict: ``rows``, ``pooled`` (successes over every finished task's
    episodes, with its Wilson interval; the mean of the per-task rates; summed times) and
    ``extra`` (e.g. the command)."""
    done = [r for r in rows if "error" not in r]
    k, n = sum(r["successes"] for r in done), sum(r["episodes"] for r in done)
    low, high = wilson_interval(k, n)
    pooled = {"tasks": len(done), "failed_tasks": len(rows) - len(done), "episodes": n, "successes": k,
              "success_rate": k / n if n else 0.0, "ci_low": low, "ci_high": high,
              "mean_task_success_rate": sum(r["success_rate"] for r in done) / len(done) if done else 0.0,
              **{key: sum(r[key] for r in done) for key in ("train_s", "eval_s", "other_s", "total_s")}}
    return {"version": SUITE_VERSION, **dict(extra or {}), "rows": [dict(r) for r in rows], "pooled": pooled}


def render_suite_markdown(table: Mapping[str, Any], title: str = "Suite") -> str:
    """The table in markdown: a row per task, then the pooled row."""
    lines = [f"# {title}", ""]
    if table.get("command"):
        lines += [f"Command: `{table['command']}`", ""]
    lines += ["| task | success | 95% CI (Wilson) | mean progress | demos | train steps | train s | eval s "
              "| other s |",
              "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in table["rows"]:
        if "error" in r:
            lines.append(f"| {r['task']} | failed: {r['error']} | | | | | | | |")
            continue
        lines.append(f"| {r['task']} | {r['success_rate']:.1%} ({r['successes']}/{r['episodes']}) "
                     f"| [{r['ci_low']:.1%}, {r['ci_high']:.1%}] | {r['mean_progress']:.2f} | {r['demos']} "
                     f"| {r['train_steps']} | {r['train_s']:.0f} | {r['eval_s']:.0f} | {r['other_s']:.0f} |")
    p = table["pooled"]
    lines.append(f"| **all {p['tasks']} tasks (pooled)** | {p['success_rate']:.1%} ({p['successes']}/{p['episodes']}) "
                 f"| [{p['ci_low']:.1%}, {p['ci_high']:.1%}] | | | | {p['train_s']:.0f} | {p['eval_s']:.0f} "
                 f"| {p['other_s']:.0f} |")
    lines += ["", f"Mean of the per-task success rates: {p['mean_task_success_rate']:.1%}."]
    if p["failed_tasks"]:
        lines.append(f"{p['failed_tasks']} task(s) failed and are left out of the pooled row.")
    lines += ["Times are wall-clock seconds: training, the final evaluation, and the rest of the run "
              "(collecting or opening the demos, setup); each task's report is in its run dir."]
    return "\n".join(lines) + "\n"


def write_suite_table(rows: Sequence[Mapping[str, Any]], out_dir: str | Path,
                      extra: Mapping[str, Any] | None = None, title: str = "Suite") -> dict[str, Path]:
    """Write ``suite.json`` and ``suite.md`` into ``out_dir``; returns their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    table = build_suite_table(rows, extra)
    paths = {"json": out / "suite.json", "markdown": out / "suite.md"}
    paths["json"].write_text(json.dumps(table, indent=2) + "\n")
    paths["markdown"].write_text(render_suite_markdown(table, title))
    return paths
