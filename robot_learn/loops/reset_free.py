"""Reset-free cycles (reversed easy-task data, rev2fwd): A, then B, then A, ... with no
scripted resets.

Both variants of a family share one scene, so the scene one task's episode ends in is
where the other task's next episode starts (``reset_to_state``): a policy that solves A
leaves the start of B, and one that solves B leaves a start of A. Only the first leg
starts from a reset (A's, at ``seed``). The cycle stops at the first leg that fails or
after ``legs`` legs; the number of legs solved in a row is the loop's reset-free score.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

# An actor (a scripted expert, or :class:`PolicyLeg`): reset(env) before each leg, act(obs, env) -> action.
Actor = Any


class PolicyLeg:
    """A learned policy as a leg's actor (a :class:`~robot_learn.loops.policy_actor.PolicyActor`)."""

    def __init__(self, policy: Any, seed: int = 0) -> None:
        from robot_learn.loops.policy_actor import PolicyActor

        self.actor = PolicyActor(policy, seed=seed)

    def reset(self, env: Any) -> None:
        self.actor.reset()

    def act(self, obs: dict[str, Any], env: Any) -> Any:
        return self.actor.act(obs)


@dataclass
class CycleResult:
    """The legs run: each ``(task, success, steps)``."""

    legs: list[tuple[str, bool, int]] = field(default_factory=list)

    @property
    def consecutive_successes(self) -> int:
        """Legs solved in a row from the first."""
        count = 0
        for _, success, _ in self.legs:
            if not success:
                break
            count += 1
        return count


def summarize(cycles: list[CycleResult]) -> dict[str, Any]:
    """A round report's numbers of some cycles: legs solved in a row in each, the longest,
    and the mean steps of the solved legs (None: none solved)."""
    in_a_row = [c.consecutive_successes for c in cycles]
    solved = [steps for c in cycles for _, success, steps in c.legs if success]
    return {"cycles": len(cycles), "consecutive_successes": in_a_row, "longest": max(in_a_row, default=0),
            "mean_steps_to_success": sum(solved) / len(solved) if solved else None}


def run_leg(env: Any, actor: Actor, obs: dict[str, Any], max_steps: int) -> tuple[bool, int]:
    """``actor`` from ``obs`` in ``env`` until its success test passes or ``max_steps``."""
    actor.reset(env)
    for step in range(1, max_steps + 1):
        obs, _, terminated, _, _ = env.step(actor.act(obs, env))
        if terminated:
            return True, step
    return False, max_steps


def reset_free_cycles(hard: str, actors: dict[str, Actor], legs: int, seed: int, max_steps: int,
                      make_env: Callable[[str], Any] | None = None) -> CycleResult:
    """Legs A, B, A, ... (A = ``hard``, B its easy reverse), each run by ``actors[task]``
    from the scene the previous leg left; stops at the first failure or after ``legs``."""
    from robot_learn.envs import easy_task_of

    if make_env is None:
        from robot_learn.envs import make_env as make

        def make_env(task: str) -> Any:
            return make(task, cameras=())

    tasks = (hard, easy_task_of(hard))
    envs = {t: make_env(t) for t in tasks}
    result = CycleResult()
    try:
        obs, _ = envs[hard].reset(seed=seed)
        for i in range(legs):
            task = tasks[i % 2]
            if i:
                obs = envs[task].unwrapped.reset_to_state(envs[tasks[(i - 1) % 2]].unwrapped.get_state())
            success, steps = run_leg(envs[task], actors[task], obs, max_steps)
            result.legs.append((task, success, steps))
            if not success:
                break
    finally:
        for env in envs.values():
            env.close()
    return result
