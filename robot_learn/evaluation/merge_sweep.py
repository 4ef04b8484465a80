"""The RETAIN α sweep: target-task success and retention on other tasks, per α.

For each α the merged policy ``(1 − α)·base + α·finetuned``
(:func:`robot_learn.policies.merging.merge_policies`) is evaluated on the task it
was fine-tuned for and on each other task; retention on a task is the merged
policy's success there divided by the base policy's.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence


def alpha_sweep(base: Any, finetuned: Any, alphas: Sequence[float | Mapping[str, float]], target_task: str,
                other_tasks: Sequence[str] = (), *, episodes: int = 50,
                success: Callable[[Any, str], Any] | None = None, **evaluate_kwargs: Any) -> list[dict[str, Any]]:
    """One row per α: ``{"alpha", "target": summary, "others": {task: summary},
    "retention": {task: merged / base success, None where the base never succeeds}}``
    (summaries: ``SuccessSummary``).
    ``success(policy, task)`` defaults to :func:`~robot_learn.evaluation.evaluate`'s summary."""
    from robot_learn.policies.merging import merge_policies

    if success is None:
        from robot_learn.evaluation import evaluate

        def success(policy: Any, task: str) -> Any:
            return evaluate(policy, task, episodes=episodes, videos=0, **evaluate_kwargs).summary

    base_on = {task: success(base, task) for task in other_tasks}
    rows = []
    for alpha in alphas:
        merged = merge_policies(base, finetuned, alpha)
        others = {task: success(merged, task) for task in other_tasks}
        rows.append({"alpha": alpha, "target": success(merged, target_task), "others": others,
                     "retention": {t: s.success_rate / base_on[t].success_rate if base_on[t].success_rate else
                                   None for t, s in others.items()}})
    return rows
