"""Where a round's episodes come from: named sources, composed with weights.

A round collects ``episodes`` episodes in all, split among ``sources`` by weight
(largest remainder): ``sources=[hitl,autonomous] source_weights=[3,1]`` in a loop
config (no weights: equal), or a ``{name: weight}`` mapping from Python. Each source runs a :class:`~robot_learn.loops.session.HITLSession`
with the current policy and records into the run's ``collected.zarr``:

- ``hitl``: under the operator, who takes over and hands back;
- ``autonomous``: the policy alone (no operator);
- ``teleop``: whole demonstrations by the operator, no policy running, until the round's
  episodes or the operator's budget of human seconds is spent (the "more demos for the
  same human-seconds" control; a simulated operator demonstrates for this source).

A session resumes after its own committed episodes (sources are told apart by the
operator recorded with each episode). Later loops add sources with :func:`register_source`.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

SourceFn = Callable[[Any, int, Any, str, Any, int, int], None]
_SOURCES: dict[str, SourceFn] = {}


def register_source(name: str, collect: SourceFn) -> None:
    """Make ``collect(ctx, round, policy, policy_id, store, episodes, seed)`` available as source ``name``."""
    _SOURCES[name] = collect


def check_sources(sources: Mapping[str, float] | Sequence[str], weights: Sequence[float] = ()) -> dict[str, float]:
    """``{name: weight}`` from a mapping, or from a list of names with ``weights`` (one per
    name; none: equal). ValueError naming the valid sources for an unknown name, and for a
    weight count that does not match, a negative weight or all weights zero."""
    if isinstance(sources, Mapping):
        if weights:
            raise ValueError("give source weights either in the sources mapping or as source_weights, not both")
        sources = {str(k): float(v) for k, v in sources.items()}
    else:
        names = [str(s) for s in sources]
        if weights and len(weights) != len(names):
            raise ValueError(f"source_weights has {len(weights)} weights for {len(names)} sources {names}; "
                             "give one per source, or none for equal weights")
        sources = dict(zip(names, [float(w) for w in weights] if weights else [1.0] * len(names)))
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


def run_session(ctx: Any, r: int, policy: Any, policy_id: str, store: Any, operator: Any, episodes: int,
                seed: int, steering: Any = None, until_budget_spent: bool = False) -> None:
    """Round ``r``'s ``episodes`` of a HITL session on a robot of ``ctx`` into ``store``
    (resuming after its committed ones); ``steering`` plans the policy's chunks (None: its own);
    ``policy`` None: the robot holds still unless the operator acts. ``until_budget_spent``:
    start no episode once the operator's human-seconds budget is spent."""
    from robot_learn.loops.policy_actor import PolicyActor
    from robot_learn.loops.session import HITLSession

    robot = ctx.make_robot()
    actor = PolicyActor(policy, seed=seed, steering=steering) if policy is not None else None
    try:
        session = HITLSession(robot, actor, operator, store, ctx.task,
                              rate_hz=ctx.rate_hz, max_steps=ctx.max_steps, round_index=r, policy_id=policy_id,
                              log_path=ctx.run_dir / "sessions.jsonl")
        if until_budget_spent:  # one episode at a time; none begun once the budget is spent
            for n in range(1, episodes + 1):
                if getattr(operator, "budget_left_s", float("inf")) <= 0 or session.paused:
                    break
                session.run(n, seed=seed)
        else:
            session.run(episodes, seed=seed)
    finally:
        robot.disconnect()
    if session.paused:
        raise RuntimeError(f"round {r}: session paused ({session.arbiter.history[-1:]}); "
                           "episodes so far are kept; rerun to resume")


def _hitl(ctx: Any, r: int, policy: Any, policy_id: str, store: Any, episodes: int, seed: int) -> None:
    if ctx.make_operator is None:
        raise ValueError("source 'hitl' needs an operator; use source 'autonomous' to run without one")
    run_session(ctx, r, policy, policy_id, store, ctx.make_operator(r), episodes, seed)


def _autonomous(ctx: Any, r: int, policy: Any, policy_id: str, store: Any, episodes: int, seed: int) -> None:
    run_session(ctx, r, policy, policy_id, store, None, episodes, seed)


def _teleop(ctx: Any, r: int, policy: Any, policy_id: str, store: Any, episodes: int, seed: int) -> None:
    if ctx.make_operator is None:
        raise ValueError("source 'teleop' needs an operator to demonstrate; valid sources without one: autonomous")
    operator = ctx.make_operator(r)
    # A simulated operator is asked to demonstrate for this source only (a person just drives).
    was = getattr(operator, "demonstrate", None)
    if was is not None:
        operator.demonstrate = True
    try:
        run_session(ctx, r, None, "teleop", store, operator, episodes, seed, until_budget_spent=True)
    finally:
        if was is not None:
            operator.demonstrate = was


register_source("hitl", _hitl)
register_source("autonomous", _autonomous)
register_source("teleop", _teleop)
