"""Running improvement rounds with resume, and the round reports and plots.

Round ``r`` is done when ``round_XX/report.json`` exists; it is written last, so a
run killed halfway redoes only the unfinished round, whose collection resumes after
the last committed episode and whose training resumes from its latest checkpoint.
``rounds.json`` holds every finished round; ``rounds.md``, ``success_vs_round.png``
and ``success_vs_human_seconds.png`` are rewritten after each round.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable


def run_rounds(run_dir: Path, rounds: int, base_policy_dir: Path, base_numbers: dict[str, Any] | None,
               run_round: Callable[[int, Path], tuple[Path, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Run rounds 1..``rounds`` (skipping finished ones); returns every round's numbers,
    with round 0 = ``base_numbers`` (the base policy's evaluation) when given."""
    run_dir = Path(run_dir)
    history = [base_numbers] if base_numbers else []
    policy_dir = Path(base_policy_dir)
    for r in range(1, rounds + 1):
        report = run_dir / f"round_{r:02d}" / "report.json"
        if report.exists():
            numbers = json.loads(report.read_text())
            print(f"round {r}: already done (success {numbers['success_rate']:.1%})")
        else:
            new_dir, numbers = run_round(r, policy_dir)
            numbers["policy_dir"] = str(new_dir)
            write_round_report(report, numbers)
        policy_dir = Path(numbers["policy_dir"])
        history.append(numbers)
        write_summary(run_dir, history)
    return history


def write_round_report(path: Path, numbers: dict[str, Any]) -> None:
    """``report.json`` and ``report.md`` of one round (the JSON is the done-marker, written last)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    (path.parent / "report.md").write_text(render_markdown([numbers], title=f"Round {numbers['round']}"))
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(numbers, indent=2))
    tmp.replace(path)


def render_markdown(history: list[dict[str, Any]], title: str = "Improvement rounds") -> str:
    """A table of rounds: success with 95% interval, throughput, interventions, human time, data."""
    lines = [f"# {title}", "",
             "| round | success | 95% CI | successes/h | interventions/ep | human s | data added |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for n in history:
        data = ", ".join(f"{k}: {v}" for k, v in n.get("data_added", {}).items()) or "-"
        lines.append(f"| {n['round']} | {n['success_rate']:.1%} ({n.get('eval_successes', '?')}/"
                     f"{n.get('eval_episodes', '?')}) | [{n['ci_low']:.1%}, {n['ci_high']:.1%}] | "
                     f"{n.get('successes_per_hour', 0.0):.0f} | {n.get('interventions_per_episode', 0.0):.2f} | "
                     f"{n.get('human_seconds', 0.0):.1f} | {data} |")
    notes = [f"- round {n['round']}: {note}" for n in history for note in n.get("notes", [])]
    return "\n".join(lines + ([""] + notes if notes else [])) + "\n"


def write_summary(run_dir: Path, history: list[dict[str, Any]]) -> None:
    """rounds.json, rounds.md and the two plots."""
    (run_dir / "rounds.json").write_text(json.dumps(history, indent=2))
    (run_dir / "rounds.md").write_text(render_markdown(history))
    plot_rounds(run_dir, {"run": history})


def plot_rounds(out_dir: Path, curves: dict[str, list[dict[str, Any]]]) -> list[Path]:
    """Success (with 95% intervals) against round and against cumulative human seconds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    for name, xlabel, x_of in (
            ("success_vs_round.png", "round", lambda h: [n["round"] for n in h]),
            ("success_vs_human_seconds.png", "cumulative human seconds",
             lambda h: list(_cumsum([n.get("human_seconds", 0.0) for n in h])))):
        fig, ax = plt.subplots(figsize=(5, 3.5))
        for label, history in curves.items():
            x = x_of(history)
            y = [n["success_rate"] for n in history]
            err = [[n["success_rate"] - n["ci_low"] for n in history], [n["ci_high"] - n["success_rate"] for n in history]]
            ax.errorbar(x, y, yerr=err, marker="o", capsize=3, label=label)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("success rate")
        ax.set_ylim(0, 1)
        ax.legend()
        fig.tight_layout()
        path = Path(out_dir) / name
        fig.savefig(path, dpi=100)
        plt.close(fig)
        paths.append(path)
    return paths


def _cumsum(values: list[float]):
    total = 0.0
    for v in values:
        total += v
        yield total
