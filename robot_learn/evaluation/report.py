"""Evaluation reports: report.json, report.md and success_per_task.png."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Mapping, Sequence

from robot_learn.evaluation.plots import plot_success_per_task
from robot_learn.evaluation.results import EvalResult, summarize_episodes

REPORT_VERSION = 1


def _jsonable(value: Any) -> Any:
    """Turn numpy scalars/arrays, paths and NaN into plain JSON values."""
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "tolist"):  # numpy scalar or array
        return _jsonable(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None  # JSON has no NaN/Inf
    return value


def build_report(results: Sequence[EvalResult], extra: Mapping[str, Any] | None = None
                 ) -> dict[str, Any]:
    """The report as a dict: per-task metrics and episodes, overall metrics, ``extra``."""
    if not results:
        raise ValueError("build_report needs at least one EvalResult")
    all_eps = [e for r in results for e in r.episodes]
    overall = summarize_episodes(all_eps)
    report = {
        "version": REPORT_VERSION,
        "tasks": {r.task: r.to_dict() for r in results},
        "overall": {
            "episodes": overall.episodes,
            "successes": overall.successes,
            "success_rate": overall.success_rate,
            "ci_low": overall.ci_low,
            "ci_high": overall.ci_high,
            "mean_progress": overall.mean_progress,
            "mean_length": overall.mean_length,
            "mean_peak_progress": overall.mean_peak_progress,
        },
    }
    if extra:
        report.update({k: v for k, v in extra.items() if k not in report})
    return _jsonable(report)


def _peak(metrics: Mapping[str, Any]) -> str:
    """The mean peak progress cell: '-' for reports that did not record it."""
    peak = metrics.get("mean_peak_progress")
    return "-" if peak is None else f"{peak:.3f}"


def render_markdown(report: Mapping[str, Any], title: str = "Evaluation report") -> str:
    """Markdown summary: one table row per task plus an overall row."""
    lines = [f"# {title}", "",
             "| task | episodes | success | 95% CI (Wilson) | mean progress | mean peak progress | mean length |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]

    def row(name: str, m: Mapping[str, Any]) -> str:
        return (f"| {name} | {m['episodes']} | {m['success_rate']:.1%} "
                f"({m['successes']}/{m['episodes']}) | "
                f"[{m['ci_low']:.1%}, {m['ci_high']:.1%}] | "
                f"{m['mean_progress']:.3f} | {_peak(m)} | {m['mean_length']:.1f} |")

    for name, m in report["tasks"].items():
        lines.append(row(name, m))
    if len(report["tasks"]) > 1:
        lines.append(row("**overall**", report["overall"]))
    seeds = [e["seed"] for m in report["tasks"].values() for e in m["per_episode"]]
    if seeds:
        lines += ["", f"Seeds {min(seeds)} .. {max(seeds)} (held out from demo seeds)."]
    for name, m in report["tasks"].items():
        conditions = m.get("info", {}).get("conditions")
        counts = m.get("disturbances") or {}
        if conditions or counts:
            happened = "; ".join(f"{kind} in {c['episodes']} episodes ({c['successes']} succeeded)"
                                 for kind, c in counts.items())
            lines += ["", f"{name} ran under {conditions or 'the default conditions'}"
                      + (f": {happened}." if happened else ".")]
    for name, m in report["tasks"].items():
        if m.get("diverged_episodes"):
            lines += ["", f"{name}: {m['diverged_episodes']} of {m['episodes']} episodes ended when the "
                      "simulation diverged (counted as failures)."]
    videos = [e["video"] for m in report["tasks"].values() for e in m["per_episode"]
              if e.get("video")]
    if videos:
        lines += ["", "Videos:"] + [f"- {v}" for v in videos]
    for key in ("policy", "checkpoint", "train"):
        if key in report:
            lines += ["", f"## {key}", "", "```json",
                      json.dumps(report[key], indent=2, sort_keys=True), "```"]
    return "\n".join(lines) + "\n"


def write_report(results: EvalResult | Sequence[EvalResult], out_dir: str | Path,
                 extra: Mapping[str, Any] | None = None,
                 title: str = "Evaluation report") -> dict[str, Path]:
    """Write ``report.json``, ``report.md`` and ``success_per_task.png`` into ``out_dir``.

    ``extra`` adds top-level JSON fields (e.g. ``policy``, ``checkpoint``,
    ``train``); it cannot overwrite the metric fields. Returns the paths written.
    """
    if isinstance(results, EvalResult):
        results = [results]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    report = build_report(results, extra)
    paths = {"json": out / "report.json", "markdown": out / "report.md",
             "plot": out / "success_per_task.png"}
    paths["json"].write_text(json.dumps(report, indent=2) + "\n")
    paths["markdown"].write_text(render_markdown(report, title))
    plot_success_per_task([r.task for r in results], [r.summary for r in results],
                          paths["plot"])
    return paths
