"""An SOP-style fleet on Ray: N robot actors stream whole episodes to one writer while a
learner trains without pause and publishes weights they swap in between episodes.

Who runs where (each a Ray actor):

- :class:`~.writer.EpisodeWriter`: the only process that appends to the online store;
- :class:`~.weight_hub.WeightHub`: the newest published weights and their ``policy_id``;
- :class:`~.learner.Learner`: trains on offline and online data mixed per task;
- :class:`~.robot_actor.RobotActor` x N: a robot and its operator, one HITL episode per call.

The driver (:class:`Fleet`) keeps one episode in flight per actor. Faults: an actor
that dies is restarted by Ray (``max_restarts``) and its episode, which it had not sent,
is gone; the driver counts the restart and gives the actor its next seed. A learner
that dies is restarted the same way and :meth:`Learner.run` is called again: it
resumes from its last checkpoint.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from robot_learn.fleet.registration import FleetRegistrationError, PolicySpaces, check_registration

LEARNER_CONCURRENCY = 4   # run() holds one thread; progress(), stop() and spaces() answer meanwhile
ACTOR_CONCURRENCY = 2     # run_episode() and progress()


@dataclass
class FleetReport:
    """What a fleet run did: its episodes in the order they were committed, restarts and timings."""

    episodes: list[dict[str, Any]] = field(default_factory=list)
    actor_restarts: dict[str, int] = field(default_factory=dict)
    learner_restarts: int = 0
    discarded: list[dict[str, Any]] = field(default_factory=list)  # episodes lost with their actor
    wall_s: float = 0.0
    learner_steps: int = 0
    learner_samples: int = 0
    online_windows: int = 0

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        return asdict(self)


class Fleet:
    """Drives a fleet (see the module docstring).

    ``learner`` holds the :class:`~.learner.Learner`'s arguments besides the hub and the
    online store (``policy_config``, ``offline_path``, ``tasks``, ``train`` and optional
    ``publish_every``, ``online_share``, ``online_data``, ``run_name``). ``online_path`` is the store the
    fleet's episodes go to. ``learner_cpus`` and each actor's ``num_cpus`` are what Ray
    reserves for them (fractions share a core). Call :meth:`start`, then :meth:`add_actors`, then
    :meth:`run` (or :meth:`poll` step by step), and :meth:`shutdown`.
    """

    def __init__(self, online_path: str | Path, learner: Mapping[str, Any], *, max_restarts: int = 3,
                 learner_cpus: float = 1.0) -> None:
        self.online_path = Path(online_path)
        self.learner_cpus = float(learner_cpus)
        self.learner_args = dict(learner)
        self.max_restarts = int(max_restarts)
        self.actors: dict[str, Any] = {}
        self.report = FleetReport()
        self._in_flight: dict[Any, tuple[str, int]] = {}   # future -> (actor, seed)
        self._learner_run: Any = None
        self._learner_probing = False   # _learner_run is a progress() probe of a restarting learner
        self._next_seed: dict[str, int] = {}
        self._restarting: set[str] = set()
        self._seed_stride = 1_000_000
        self._t0 = 0.0
        self.learner_spaces: PolicySpaces | None = None

    # ----- setting up ------------------------------------------------------------------
    def start(self) -> None:
        """Start the writer, the hub and the learner (which publishes its first weights);
        returns without waiting for the learner, so actors can start alongside it."""
        import ray

        from robot_learn.fleet.learner import Learner
        from robot_learn.fleet.weight_hub import WeightHub
        from robot_learn.fleet.writer import EpisodeWriter

        self.writer = ray.remote(EpisodeWriter).options(num_cpus=0).remote(str(self.online_path))
        self.hub = ray.remote(WeightHub).options(num_cpus=0).remote()
        ray.get(self.writer.keys.remote())  # the store exists before the learner looks for it
        self.learner = ray.remote(Learner).options(
            num_cpus=self.learner_cpus, max_restarts=self.max_restarts, max_concurrency=LEARNER_CONCURRENCY).remote(
            online_path=str(self.online_path), hub=self.hub, **self.learner_args)
        self._learner_run = self.learner.run.remote()
        self._t0 = time.perf_counter()

    def add_actors(self, specs: Sequence[Mapping[str, Any]]) -> list[Any]:
        """Start robot actors side by side and register each; a spec holds
        :class:`~.robot_actor.RobotActor`'s arguments (``name``, ``task``, ``robot``,
        ``operator``, ``max_steps``; optional ``rate_hz``, ``realtime``, ``policy_files``,
        ``policy_name``, ``seed``) and optional ``num_cpus`` (default 1).

        FleetRegistrationError, before any actor of the call starts (nothing is
        recorded), when an actor's policy has other observation or action spaces than the
        learner's, or its robot lacks an observation the learner's policy reads."""
        import ray

        from robot_learn.fleet.robot_actor import RobotActor

        names = [str(s["name"]) for s in specs]
        taken = [n for n in names if n in self.actors or names.count(n) > 1]
        if taken:
            raise ValueError(f"actor name(s) {sorted(set(taken))} used twice; actors so far: "
                             f"{', '.join(self.actors) or '(none)'}")
        if self.learner_spaces is None:
            self.learner_spaces = ray.get(self.learner.spaces.remote())
        for spec in specs:  # before any actor starts: a refused one records nothing
            self._register(spec)
        started = []
        for index, spec in enumerate(specs, start=len(self.actors)):
            args = dict(spec)
            num_cpus = float(args.pop("num_cpus", 1.0))
            args.setdefault("seed", index * self._seed_stride)
            args["robot"] = dict(args["robot"])
            args["operator"] = dict(args["operator"]) if args.get("operator") else None
            started.append((args, ray.remote(RobotActor).options(
                num_cpus=num_cpus, max_restarts=self.max_restarts, max_concurrency=ACTOR_CONCURRENCY).remote(
                writer=self.writer, hub=self.hub, **args)))
        ray.get([actor.progress.remote() for _, actor in started])  # each is up
        for args, actor in started:
            self.actors[args["name"]] = actor
            self._next_seed[args["name"]] = int(args["seed"])
            self.report.actor_restarts[args["name"]] = 0
        return [actor for _, actor in started]

    def _register(self, spec: Mapping[str, Any]) -> None:
        """FleetRegistrationError unless the actor of ``spec`` fits the learner: its own policy
        (if it brings one) has the learner's spaces, and its robot provides what the learner's
        policy reads. Checked here, from the policy's files and the robot's config."""
        from hydra.utils import instantiate

        from robot_learn.fleet.policy_transfer import policy_from_files

        assert self.learner_spaces is not None
        name = str(spec["name"])
        if spec.get("policy_files") is not None:
            spaces = PolicySpaces.of(policy_from_files(spec["policy_files"]))
            check_registration(name, spaces, self.learner_spaces, str(spec.get("policy_name", "")), "learner")
        robot = instantiate(dict(spec["robot"]))
        provided = robot.observation_spec()
        missing = [k for k in self.learner_spaces.obs_shapes if k not in provided]
        if missing:
            raise FleetRegistrationError(
                f"actor '{name}' refused: the learner's policy reads {', '.join(missing)}, which its robot does "
                f"not provide (it provides {', '.join(sorted(provided))})")

    # ----- running -----------------------------------------------------------------------
    def run(self, episodes: int, timeout_s: float | None = None) -> FleetReport:
        """Run until ``episodes`` episodes are committed (or ``timeout_s`` passes); the
        learner trains meanwhile. Returns the report (the learner keeps training until
        :meth:`shutdown`)."""
        if episodes < 1:
            raise ValueError(f"episodes must be >= 1, got {episodes}")
        if not self.actors:
            raise ValueError("the fleet has no actors; add_actors() first")
        deadline = None if timeout_s is None else time.perf_counter() + timeout_s
        while len(self.report.episodes) < episodes:
            if deadline is not None and time.perf_counter() > deadline:
                break
            self.poll(timeout_s=1.0)
        return self.report

    def poll(self, timeout_s: float = 1.0) -> list[dict[str, Any]]:
        """Give every idle actor an episode, wait up to ``timeout_s`` for episodes to end
        and handle them (a dead actor's episode is discarded and the actor resubmitted
        once Ray has restarted it; a dead learner is run again). Returns the episodes committed."""
        import ray
        from ray.exceptions import RayActorError

        busy = {name for name, _ in self._in_flight.values()}
        for name, actor in self.actors.items():
            if name in busy:
                continue
            if name in self._restarting:
                # Calls to an actor Ray is still restarting fail at once: ask until it answers.
                self._in_flight[actor.progress.remote()] = (name, -1)
                continue
            seed = self._next_seed[name]
            self._next_seed[name] += 1
            self._in_flight[actor.run_episode.remote(seed)] = (name, seed)
        done, _ = ray.wait(list(self._in_flight), num_returns=1, timeout=timeout_s)
        committed = []
        for ref in done:
            name, seed = self._in_flight.pop(ref)
            try:
                summary = ray.get(ref)
            except RayActorError:
                if seed >= 0:
                    # Died mid-episode: it never sent the episode. Ray restarts the actor.
                    self.report.actor_restarts[name] += 1
                    self.report.discarded.append({"actor": name, "seed": seed})
                    self._restarting.add(name)
                else:
                    time.sleep(min(timeout_s, 0.2))
                continue
            if seed < 0:
                self._restarting.discard(name)  # it answers again
            else:
                committed.append(summary)
        self.report.episodes += committed
        self._check_learner()
        self.report.wall_s = time.perf_counter() - self._t0
        return committed

    def _check_learner(self) -> None:
        import ray
        from ray.exceptions import RayActorError

        if self._learner_run is None:
            return
        ready, _ = ray.wait([self._learner_run], timeout=0)
        if not ready:
            return
        probing = self._learner_probing
        try:
            ray.get(self._learner_run)
        except RayActorError:
            if not probing:  # run() died with the learner; Ray restarts it
                self.report.learner_restarts += 1
            # Calls fail at once while Ray restarts it: ask until it answers, then run again.
            self._learner_run, self._learner_probing = self.learner.progress.remote(), True
            return
        if probing:  # it answers: run again, resuming from its last checkpoint
            self._learner_run, self._learner_probing = self.learner.run.remote(), False
        else:
            self._learner_run = None  # finished its steps

    def learner_progress(self) -> dict[str, int] | None:
        """The learner's :meth:`~.learner.Learner.progress`; None while Ray restarts it."""
        import ray
        from ray.exceptions import RayActorError

        try:
            return ray.get(self.learner.progress.remote())
        except RayActorError:
            return None

    def actor_progress(self, name: str) -> dict[str, Any]:
        import ray

        return ray.get(self.actors[name].progress.remote())

    def shutdown(self) -> FleetReport:
        """Stop the learner (after a checkpoint) and the actors; close the store. Episodes in
        flight are left unrecorded, like those of a dead actor."""
        import ray

        progress = None
        try:
            progress = self.learner_progress()
            ray.get(self.learner.stop.remote())
            if self._learner_run is not None:
                ray.get(self._learner_run, timeout=120)
        except Exception:  # a learner dead at shutdown has its checkpoint already
            pass
        for actor in [*self.actors.values(), self.learner]:
            ray.kill(actor, no_restart=True)
        ray.get(self.writer.close.remote())
        for handle in (self.writer, self.hub):
            ray.kill(handle, no_restart=True)
        if progress:
            self.report.learner_steps = progress["step"]
            self.report.learner_samples = progress["step"] * progress["batch_size"]
            self.report.online_windows = progress["online_windows"]
        return self.report

