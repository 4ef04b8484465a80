"""A fleet actor: one robot (the MuJoCo twin or a real arm) with its operator, running
HITL episodes under the fleet's latest weights.

Each episode is one :meth:`~robot_learn.loops.HITLSession.run_episode` (the same
arbitration and recording as a single session), committed through the fleet's single
writer and tagged with the ``policy_id`` that drove it. Between episodes the actor
asks the weight hub for newer weights and swaps them in; never during one.
"""

from __future__ import annotations

from typing import Any, Mapping


class RobotActor:
    """``robot`` and ``operator`` are Hydra node dicts (``_target_`` and arguments), built
    in the actor's process. ``policy_files`` (optional, :mod:`.policy_transfer`) is a
    policy the actor starts with, ``policy_name`` its id; without it the actor waits for
    the learner's first weights. It must fit the learner's spaces (checked at registration,
    :meth:`~.fleet.Fleet.add_actors`). ``realtime`` paces episodes at ``rate_hz`` (a real
    arm's pace); the twin otherwise runs as fast as it can.
    """

    def __init__(self, name: str, task: str, writer: Any, hub: Any, robot: Mapping[str, Any],
                 operator: Mapping[str, Any] | None, *, max_steps: int, rate_hz: float = 10.0,
                 policy_files: dict[str, bytes] | None = None, policy_name: str = "", seed: int = 0,
                 realtime: bool = False) -> None:
        import torch
        from hydra.utils import instantiate

        from robot_learn.fleet.writer import RemoteStore

        torch.set_num_threads(1)
        self.name, self.task, self.hub, self.seed = name, task, hub, int(seed)
        self.max_steps, self.rate_hz, self.realtime = int(max_steps), float(rate_hz), bool(realtime)
        self.robot = instantiate(dict(robot))
        self.robot.connect()
        self.operator = instantiate(dict(operator)) if operator else None
        self.store = RemoteStore(writer)
        self.session: Any = None
        self.policy_id = ""
        self.in_flight: int | None = None  # the seed of the episode running now
        if policy_files is not None:
            self._use(policy_name or "actor-policy", policy_files)

    # ----- episodes ------------------------------------------------------------------
    def run_episode(self, seed: int) -> dict[str, Any]:
        """Swap in the newest published weights, then run and commit one episode from ``seed``."""
        import ray

        newer = ray.get(self.hub.latest.remote(self.policy_id))
        if newer is not None:
            self._use(*newer)
        if self.session is None:
            raise RuntimeError(f"actor '{self.name}' has no policy yet: the learner has published none")
        self.in_flight = int(seed)
        try:
            ep = self.session.run_episode(int(seed))
        finally:
            self.in_flight = None
        return {"actor": self.name, "index": ep.index, "seed": ep.seed, "steps": ep.steps, "success": ep.success,
                "source": ep.source, "human_steps": ep.human_steps, "policy_id": self.policy_id,
                "wall_s": ep.wall_s}

    def progress(self) -> dict[str, Any]:
        """The episode running now (its seed; None between episodes) and its steps so far."""
        env = getattr(self.robot, "env", None)
        steps = int(getattr(getattr(env, "unwrapped", None), "steps", -1)) if env is not None else -1
        return {"seed": self.in_flight, "steps": steps if self.in_flight is not None else 0}

    def _use(self, policy_id: str, files: dict[str, bytes]) -> None:
        from robot_learn.fleet.policy_transfer import policy_from_files
        from robot_learn.loops import HITLSession, PolicyActor

        actor = PolicyActor(policy_from_files(files), seed=self.seed)
        if self.session is None:
            self.session = HITLSession(self.robot, actor, self.operator, self.store, self.task,
                                       rate_hz=self.rate_hz, max_steps=self.max_steps, policy_id=policy_id,
                                       realtime=self.realtime)
        else:
            self.session.policy, self.session.policy_id = actor, policy_id
        self.policy_id = policy_id
