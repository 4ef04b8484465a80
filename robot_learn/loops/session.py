"""A HITL session: one control loop driving a Robot, arbitrating policy vs operator, recording.

Each control step, in order:
1. observe the robot;
2. the policy proposes an action (a non-finite proposal is caught here and never sent);
3. the operator sees the observation and the proposal and may ask to take over or hand back;
4. the :class:`~robot_learn.loops.control.ControlArbiter` decides the mode;
5. the action of whoever is in control is sent; the step is recorded with both the
   executed and the proposed action (``action``, ``policy_action``), who was in
   control (``intervention``: the operator, i.e. mode HUMAN; otherwise AUTONOMOUS —
   paused and reset steps send nothing and are not recorded) and when
   (``timestamp``: wall-clock seconds when the step was observed). The low-dim
   observation keys recorded are the robot's (its ``observation_spec``); a policy that
   needs a key the robot does not provide is refused before the first step.

Episodes are committed to the EpisodeStore one at a time (atomic appends), tagged
``source="intervention"`` when a human acted in them and ``"rollout"`` otherwise,
with the round number and operator id. A session killed halfway loses only the
episode in flight; :meth:`HITLSession.run` resumes after the last committed one.
A store begun before timestamps were recorded keeps its schema: episodes appended
to it carry no ``timestamp`` (a warning says so). The optional JSON-lines log gets
one :class:`EpisodeSummary` per episode (takeovers, faults, why it paused, the steering
request). :meth:`HITLSession.steer` points the policy at what the operator asks
(ITPS: a point, a sketch or a correction; :mod:`robot_learn.loops.steering`).
"""

from __future__ import annotations

import json
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from robot_learn.data import EpisodeRecorder
from robot_learn.loops.control import ControlArbiter, Mode, Request
from robot_learn.loops.operators.base import Operator, OperatorDisconnected, pose_of
from robot_learn.loops.policy_actor import PolicyActor
from robot_learn.loops.steering import build_steering

# Appended to the operator id of an episode that ended paused, saying why: the operator's
# device dropped out, the operator paused or e-stopped (e.g. from the console), or the
# policy kept producing non-finite actions.
DISCONNECT_MARK = " [paused: device disconnected]"
OPERATOR_PAUSE_MARK = " [paused: by the operator]"
POLICY_FAULT_MARK = " [paused: policy faults]"
PAUSE_MARKS = (DISCONNECT_MARK, OPERATOR_PAUSE_MARK, POLICY_FAULT_MARK)


@dataclass
class EpisodeSummary:
    """What one session episode did (also a line of the session log)."""

    index: int                 # episode index in the store (-1: nothing recorded)
    seed: int
    steps: int
    success: bool
    source: str
    human_steps: int
    human_s: float
    takeovers: int
    policy_faults: int
    paused: bool
    wall_s: float
    reason: str = ""
    steering: str = ""         # the operator's steering request when the episode began ("" unsteered)
    pause_mark: str = ""       # why it paused: one of PAUSE_MARKS ("" when it did not)


class HITLSession:
    """Runs episodes of ``robot`` under ``policy`` and ``operator``, recording to ``store``.

    ``robot`` must offer ``reset(seed)`` between episodes (the MuJoCo twin does; for a
    real arm pass ``reset_fn`` that waits for the scene to be reset). ``policy`` is a
    :class:`PolicyActor` (or None: the robot holds still unless the operator acts).
    ``realtime`` paces the loop at ``rate_hz`` with the hardware RateLoop; the twin runs
    as fast as it can, and time is counted in control periods either way.
    """

    def __init__(self, robot: Any, policy: PolicyActor | None, operator: Operator | None, store: Any,
                 task: str, *, rate_hz: float = 10.0, max_steps: int = 100, round_index: int = 0,
                 policy_id: str = "", realtime: bool = False, max_policy_faults: int = 3,
                 reset_fn: Callable[[Any, int], None] | None = None,
                 log_path: str | Path | None = None) -> None:
        if rate_hz <= 0:
            raise ValueError(f"rate_hz must be > 0, got {rate_hz}")
        if max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps}")
        self.robot, self.policy, self.operator, self.store = robot, policy, operator, store
        self.task, self.rate_hz, self.max_steps = task, float(rate_hz), int(max_steps)
        self.round, self.policy_id, self.realtime = int(round_index), policy_id, realtime
        self.max_policy_faults = int(max_policy_faults)
        self.reset_fn = reset_fn or (lambda robot, seed: robot.reset(seed))
        self.log_path = Path(log_path) if log_path else None
        self.arbiter = ControlArbiter()
        self.paused = False
        self.record_timestamps = not store.keys or "timestamp" in store.keys
        if not self.record_timestamps:
            warnings.warn(f"store {getattr(store, 'path', store)} was begun without per-step timestamps; "
                          "episodes appended to it keep that schema and record none", stacklevel=2)
        self.record_keys = record_keys(robot, policy, store)

    # ----- steering ------------------------------------------------------------------
    def steer(self, request: str | None, sampler: str = "stochastic", **settings: Any) -> None:
        """Steer the policy toward ``request`` (``point:x,y,z``, ``sketch:...``, ``correction:...``;
        see :mod:`robot_learn.loops.steering`) with the ITPS ``sampler``, from its next chunk
        on; None stops steering. ValueError (nothing changed) for a request the robot or the
        policy cannot take."""
        if not isinstance(self.policy, PolicyActor):
            raise ValueError(f"steering needs the session's policy to be a PolicyActor, got {type(self.policy).__name__}")
        steering = None if request is None else build_steering(request, self.robot, self.policy.policy, sampler,
                                                              **settings)
        self.policy.steer(steering)

    @property
    def steering(self) -> str:
        """The steering request in force ("" when the policy samples unsteered)."""
        return getattr(getattr(self.policy, "steering", None), "label", "")

    # ----- many episodes -----------------------------------------------------------
    def committed(self) -> int:
        """Episodes of this round, task and policy already in the store (a resumed session
        skips them). Another policy's episodes in the same round and task are a
        ValueError: resuming on them would silently run too few episodes."""
        if self.store.num_episodes == 0:
            return 0
        view = self.store.view(round=self.round, source=["rollout", "intervention"], task=self.task)
        policies = [str(p) for p in np.asarray(self.store.meta["policy_id"])[view.episodes]]
        others = sorted(set(policies) - {self.policy_id})
        if others:
            raise ValueError(
                f"store {getattr(self.store, 'path', '')} already holds round {self.round} '{self.task}' episodes "
                f"of another policy ({', '.join(map(repr, others))}), not of this session's policy "
                f"{self.policy_id!r}; give this policy its own round (round=...) or store")
        # Another operator's episodes (e.g. the autonomous source's, operator "") are theirs.
        operators = [strip_pause_mark(str(o)) for o in np.asarray(self.store.meta["operator"])[view.episodes]]
        return operators.count(self.operator_id)

    @property
    def operator_id(self) -> str:
        """The operator's id as recorded in episode meta ("" without an operator)."""
        return getattr(self.operator, "id", "") if self.operator is not None else ""

    def run(self, episodes: int, seed: int = 0) -> list[EpisodeSummary]:
        """Run until the round holds ``episodes`` episodes (seeds ``seed + i``); stops early,
        with ``self.paused`` set, when the operator's device disconnects."""
        if episodes < 1:
            raise ValueError(f"episodes must be >= 1, got {episodes}")
        done = []
        for i in range(self.committed(), episodes):
            summary = self.run_episode(seed + i)
            done.append(summary)
            if summary.paused:
                break
        return done

    # ----- one episode ---------------------------------------------------------------
    def run_episode(self, seed: int) -> EpisodeSummary:
        """Reset the scene, run one episode and commit it; see the module docstring."""
        t_start = time.perf_counter()
        self.arbiter.force(Mode.RESET)
        self.reset_fn(self.robot, seed)
        self.arbiter.submit(Request.RESET_DONE)
        if self.policy is not None:
            self.policy.reset()
        if self.operator is not None:
            self.operator.start_episode(self.robot)
        recorder = EpisodeRecorder(self.record_keys)
        ep = EpisodeSummary(-1, int(seed), 0, False, "rollout", 0, 0.0, 0, 0, False, 0.0, steering=self.steering)
        last_action: np.ndarray | None = None
        faults_in_row = 0
        previous_mode = Mode.AUTONOMOUS
        instruction = ""

        def pause(mark: str, reason: str) -> None:
            # The first cause of the pause names it; later ones in the same step do not.
            self.arbiter.submit(Request.PAUSE)
            if not ep.pause_mark:
                ep.pause_mark, ep.reason = mark, reason

        def step(_: int) -> bool:
            nonlocal last_action, faults_in_row, previous_mode, instruction
            obs = self.robot.get_observation()
            observed_at = time.time()
            instruction = str(obs.get("instruction", ""))
            hold = last_action if last_action is not None else _hold_action(obs)
            proposed = self.policy.act(obs) if self.policy is not None else None
            if proposed is not None and not np.all(np.isfinite(proposed)):
                # Caught before execution: hold still; repeated faults pause the session.
                ep.policy_faults += 1
                faults_in_row += 1
                proposed = None
                if faults_in_row >= self.max_policy_faults:
                    pause(POLICY_FAULT_MARK, f"policy produced non-finite actions {faults_in_row} steps in a row")
            elif proposed is not None:
                faults_in_row = 0
            if self.operator is not None:
                try:
                    for request in self.operator.poll(obs, proposed, self.arbiter.mode):
                        if request is Request.PAUSE:
                            pause(OPERATOR_PAUSE_MARK, f"operator {self.operator_id!r} paused the session")
                        else:
                            self.arbiter.submit(request)
                except OperatorDisconnected as err:
                    pause(DISCONNECT_MARK, str(err))
            mode = self.arbiter.step()
            if mode is Mode.HUMAN:
                try:
                    action = np.asarray(self.operator.act(obs), dtype=np.float32)
                except OperatorDisconnected as err:
                    pause(DISCONNECT_MARK, str(err))
                    mode = self.arbiter.step()
            if mode is Mode.PAUSED:
                ep.paused = True
                return False  # nothing is sent: the arm holds its last command
            if mode is Mode.RESET:
                return False  # the operator asked for a reset: the episode ends here
            if mode is Mode.AUTONOMOUS:
                action = proposed if proposed is not None else hold
                if previous_mode is Mode.HUMAN and self.policy is not None:
                    self.policy.reset()  # its queued chunk was planned before the takeover
            if mode is Mode.HUMAN and previous_mode is not Mode.HUMAN:
                ep.takeovers += 1
            previous_mode = mode
            self.robot.send_action(action)
            last_action = action
            info = obs.get("info", {})
            recorder.record(obs, action, policy_action=proposed if proposed is not None else hold,
                            intervention=mode is Mode.HUMAN, reward=float(getattr(self.robot, "last_reward", 0.0)),
                            progress=float(info.get("progress", 0.0)), phase=int(info.get("phase", 0)),
                            timestamp=observed_at if self.record_timestamps else None)
            return not getattr(self.robot, "done", False)

        if self.realtime:
            from robot_learn.hardware.control_loop import RateLoop

            RateLoop(self.rate_hz).run(step, iterations=self.max_steps)
        else:
            for i in range(self.max_steps):
                if not step(i):
                    break
        if self.operator is not None:
            self.operator.end_episode()
        info = self.robot.get_observation().get("info", {})
        ep.steps = len(recorder)
        ep.success = bool(info.get("success", False))
        ep.human_steps = int(sum(recorder.rows.get("intervention", [])))
        ep.human_s = ep.human_steps / self.rate_hz
        ep.source = "intervention" if ep.human_steps else "rollout"
        ep.wall_s = time.perf_counter() - t_start
        if ep.steps:
            ep.index = recorder.commit(self.store, {
                "task": self.task, "instruction": instruction, "success": ep.success, "seed": int(seed),
                "source": ep.source, "round": self.round, "policy_id": self.policy_id,
                "operator": self.operator_id + (ep.pause_mark if ep.paused else "")})
        self.paused = ep.paused
        self._log(ep)
        return ep

    def _log(self, ep: EpisodeSummary) -> None:
        if self.log_path is None:
            return
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "a") as f:
            f.write(json.dumps({"round": self.round, **asdict(ep)}) + "\n")


def strip_pause_mark(operator: str) -> str:
    """A recorded operator id without the pause mark it may carry (see PAUSE_MARKS)."""
    for mark in PAUSE_MARKS:
        if operator.endswith(mark):
            return operator[: -len(mark)]
    return operator


def _hold_action(obs: dict[str, Any]) -> np.ndarray:
    """Stay where the robot is: its pose with the gripper as it is (pose mode), or its
    joint positions (a joint-mode arm, whose ``state`` is just its joints)."""
    if "state" in obs and np.asarray(obs["state"]).shape[-1] < 10:
        return np.asarray(obs["state"], dtype=np.float32).copy()
    gripper_closed = float(np.asarray(obs["state"])[5]) > 0.5 if "state" in obs else False
    return np.append(pose_of(obs), float(gripper_closed)).astype(np.float32)


def check_policy_fits_robot(robot: Any, policy: Any) -> dict[str, tuple[int, ...]]:
    """The robot's ``observation_spec``; ValueError, naming the keys, when the policy
    (anything with ``observation_keys``) needs an observation the robot does not provide."""
    spec = robot.observation_spec()
    missing = [k for k in getattr(policy, "observation_keys", ()) if k not in spec]
    if missing:
        raise ValueError(f"the policy needs observation {', '.join(map(repr, missing))} but robot "
                         f"{type(robot).__name__} provides only {', '.join(sorted(spec))}")
    return spec


def record_keys(robot: Any, policy: Any, store: Any) -> tuple[str, ...]:
    """The low-dim observation keys a session records: those of the robot's
    ``observation_spec`` (a store already begun keeps its own), after
    :func:`check_policy_fits_robot`."""
    low_dim = [k for k in check_policy_fits_robot(robot, policy) if not k.startswith("images/")]
    if store.keys:
        low_dim = [k for k in low_dim if k in store.keys]
    return tuple(low_dim)
