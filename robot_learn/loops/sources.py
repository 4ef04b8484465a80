"""Where a round's episodes come from: named sources, composed with weights.

A round collects ``episodes`` episodes in all; ``sources`` (``{name: weight}``) split
them (largest remainder). Each source runs a :class:`~robot_learn.loops.session.HITLSession`
with the current policy and records into the run's ``collected.zarr``:

- ``hitl``: under the operator, who takes over and hands back;
- ``autonomous``: the policy alone (no operator).

A session resumes after its own committed episodes (sources are told apart by the
operator recorded with each episode). Later loops add sources with :func:`register_source`.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

SourceFn = Callable[[Any, int, Any, str, Any, int, int], None]
_SOURCES: dict[str, SourceFn] = {}


def register_source(name: str, collect: SourceFn) -> None:
    """Make ``collect(ctx, round, policy, policy_id, store, episodes, seed)`` available as source ``name``."""
    _SOURCES[name] = collect


def source_names() -> tuple[str, ...]:
    return tuple(_SOURCES)


def check_sources(sources: Mapping[str, float] | list[str]) -> dict[str, float]:
    """``{name: weight}`` (a list means equal weights); ValueError naming the valid sources
    for an unknown name, and for a negative weight or all weights zero."""
    sources = {str(s): 1.0 for s in sources} if isinstance(sources, (list, tuple)) else \
        {str(k): float(v) for k, v in dict(sources).items()}
    for name, weight in sources.items():
        if name not in _SOURCES:
            raise ValueError(f"unknown source '{name}'; valid sources: {', '.join(_SOURCES)}")
        if weight < 0:
            raise ValueError(f"source '{name}' has weight {weight}; weights must be >= 0")
    if not sources or not any(sources.values()):
        raise ValueError(f"source weights are all zero ({sources or 'none given'}); give at least one of "
                         f"{', '.join(_SOURCES)} a positive weight")
    return sources


def split_episodes(episodes: int, weights: Mapping[str, float]) -> dict[str, int]:
    """Episodes per source proportional to ``weights`` (largest remainder; sums to ``episodes``)."""
    total = sum(weights.values())
    exact = {n: episodes * w / total for n, w in weights.items()}
    counts = {n: int(v) for n, v in exact.items()}
    by_remainder = sorted(exact, key=lambda n: counts[n] - exact[n])
    for n in by_remainder[: episodes - sum(counts.values())]:
        counts[n] += 1
    return counts


def collect_from_sources(ctx: Any, sources: Mapping[str, float], episodes: int, seed: int, r: int,
                         policy: Any, policy_id: str, store: Any) -> None:
    """Collect round ``r``'s episodes from each source; source k's seeds follow source k-1's."""
    for name, n in split_episodes(episodes, sources).items():
        if n:
            _SOURCES[name](ctx, r, policy, policy_id, store, n, seed)
        seed += n


def _session(ctx: Any, r: int, policy: Any, policy_id: str, store: Any, operator: Any, episodes: int,
             seed: int) -> None:
    from robot_learn.loops.policy_actor import PolicyActor
    from robot_learn.loops.session import HITLSession

    robot = ctx.make_robot()
    try:
        session = HITLSession(robot, PolicyActor(policy, seed=seed), operator, store, ctx.task,
                              rate_hz=ctx.rate_hz, max_steps=ctx.max_steps, round_index=r, policy_id=policy_id,
                              log_path=ctx.run_dir / "sessions.jsonl")
        session.run(episodes, seed=seed)
    finally:
        robot.disconnect()
    if session.paused:
        raise RuntimeError(f"round {r}: session paused ({session.arbiter.history[-1:]}); "
                           "episodes so far are kept; rerun to resume")


def _hitl(ctx: Any, r: int, policy: Any, policy_id: str, store: Any, episodes: int, seed: int) -> None:
    if ctx.make_operator is None:
        raise ValueError("source 'hitl' needs an operator; use source 'autonomous' to run without one")
    _session(ctx, r, policy, policy_id, store, ctx.make_operator(r), episodes, seed)


def _autonomous(ctx: Any, r: int, policy: Any, policy_id: str, store: Any, episodes: int, seed: int) -> None:
    _session(ctx, r, policy, policy_id, store, None, episodes, seed)


register_source("hitl", _hitl)
register_source("autonomous", _autonomous)
