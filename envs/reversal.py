"""Time reversal: turn reverse-task (easy) episodes into forward-task (hard) demonstrations.

Pose actions are absolute, so an episode can be played backwards: the arm
visits the recorded end-effector poses in reverse order and the gripper
commands run backwards (a release becomes a grasp).  Both variants of a family
share one scene, so the reverse episode's *final* scene is a start of the
forward task, and its first scene is the forward task's goal.

- :func:`reverse_episode` / :func:`frame_actions`: the actions of a pose
  sequence, ``action[t] = (pose[t + 1], gripper[t])``;
- :func:`reverse_steps` / :func:`reverse_recorded` / :func:`reverse_into`: a
  stored episode (its steps, with its meta, or a store's episodes) reversed in
  time: observations, images and poses reversed, actions rebuilt as absolute
  targets, instruction reworded for the forward task;
- :func:`replay_reversed`: play a recorded reverse episode backwards in the
  forward env (the test that reversal is well defined).

Meta-World's actions are hand displacements (``"delta"`` mode): reversed, each is
negated (:func:`reverse_displacements`); the pair is ``metaworld/peg-insert-side-reverse`` ->
``metaworld/peg-insert-side`` (``envs/external/metaworld_reverse.py``).

Episodes meant for reversal are recorded *to rest* (``collect_demos(..., to_rest=True)``):
past success the expert retreats and returns to its start pose, so the
reversed episode starts where the forward task's episodes start.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from .base_env import TabletopEnv
from .demos import run_expert
from .external.metaworld_reverse import REVERSE_PAIRS
from .external.metaworld_tasks import metaworld_instruction
from .registry import TASK_SPECS, family_task, make_env, make_expert, task_spec

EE_POSE = slice(6, 10)  # x, y, z, yaw of the end effector in ``state``
GRIPPER = 4             # the gripper command in a pose action
POSE_ACTION_DIM = 5     # x, y, z, yaw, gripper
TRACKING_TOLERANCE = 0.02  # m: pose targets sit this close (median) to the poses they reach
DELTA_WIDTH = 4             # Meta-World: hand displacement x, y, z and gripper effort; state: hand x, y, z, opening


def reverse_pairs() -> dict[str, str]:
    """Every registered pair, easy (reverse) task -> hard (forward) task (Meta-World's last)."""
    return {**{s.name: s.partner for s in TASK_SPECS.values() if s.variant == "reverse"}, **REVERSE_PAIRS}


def _pairs_text() -> str:
    return ", ".join(f"{easy} -> {hard}" for easy, hard in reverse_pairs().items())


def forward_task_of(easy: str) -> str:
    """The hard task that reversed ``easy`` episodes demonstrate; ValueError listing the pairs."""
    pairs = reverse_pairs()
    if easy not in pairs:
        raise ValueError(f"task {easy!r} has no registered reverse pair to reverse into; "
                         f"pairs (easy -> hard): {_pairs_text()}")
    return pairs[easy]


def easy_task_of(hard: str) -> str:
    """The easy task whose reversed episodes demonstrate ``hard``; ValueError listing the pairs."""
    for easy, forward in reverse_pairs().items():
        if forward == hard:
            return easy
    raise ValueError(f"task {hard!r} has no registered easy reverse task to learn it from; "
                     f"pairs (easy -> hard): {_pairs_text()}")


def forward_instruction(easy: str, instruction: str) -> str:
    """The forward task's wording of an ``easy`` task instruction (same template index and
    colours, as ``set_state`` words a state loaded from the other variant); a Meta-World
    task's is its name in words."""
    if easy in REVERSE_PAIRS:
        return metaworld_instruction(REVERSE_PAIRS[easy].partition("/")[2])
    reverse, forward = family_task(easy), family_task(task_spec(easy).partner)
    for i, template in enumerate(reverse.templates):
        pattern = re.escape(template).replace(r"\{move\}", "(?P<move>[a-z]+)").replace(r"\{target\}", "(?P<target>[a-z]+)")
        found = re.fullmatch(pattern, instruction)
        if found:
            return forward.instruction(i, found.groupdict())
    raise ValueError(f"instruction {instruction!r} matches none of the {easy!r} templates: "
                     f"{'; '.join(reverse.templates)}")


def action_mode_of(actions: np.ndarray, states: np.ndarray) -> str:
    """``"pose"`` for absolute end-effector targets (x, y, z, yaw, gripper) that the
    recorded poses follow; ``"joint"`` for joint targets; ``"relative"`` for 5-wide
    actions far from the poses they reach (steps, not targets); ``"delta"`` for
    Meta-World's hand displacements (4-wide actions over a 4-wide state); else ``"<n>-wide"``."""
    actions, states = np.asarray(actions), np.asarray(states)
    width = actions.shape[-1]
    if width == 6:
        return "joint"
    if width == DELTA_WIDTH and states.shape[-1] == DELTA_WIDTH:
        return "delta"
    if width != POSE_ACTION_DIM or states.shape[-1] < EE_POSE.stop:
        return f"{width}-wide"
    if len(actions) < 2:
        return "pose"
    reached = states[1:, EE_POSE][:, :3]
    error = np.median(np.linalg.norm(actions[:-1, :3] - reached, axis=1))
    return "pose" if error <= TRACKING_TOLERANCE else "relative"


def check_pose_actions(steps: Mapping[str, np.ndarray], where: str) -> None:
    """ValueError naming the action mode unless ``steps`` holds absolute pose actions."""
    if "state" not in steps:
        raise ValueError(f"{where} has no 'state' (end-effector poses); keys: {', '.join(sorted(steps))}")
    mode = action_mode_of(steps["action"], steps["state"])
    if mode != "pose":
        said = {"joint": "joint-target actions (action mode 'joint')",
                "delta": "hand displacements (action mode 'delta', Meta-World's)",
                "relative": "relative pose actions (action mode 'relative': the poses reached do not follow "
                            "them as targets)"}.get(mode, f"{mode} actions (no action mode of these tasks)")
        raise ValueError(f"{where} has {said}, not absolute end-effector poses; reversal and the kinematic "
                         f"filter need action mode 'pose' (x, y, z, yaw, gripper)")


def next_pose_actions(poses: np.ndarray, gripper: np.ndarray) -> np.ndarray:
    """``[n, 5]`` float32 pose actions, ``action[t] = (poses[t + 1], gripper[t])``, from
    ``poses`` ``[n + 1, 4]`` and ``gripper`` ``[n]``."""
    actions = np.empty((len(gripper), POSE_ACTION_DIM), dtype=np.float32)
    actions[:, :4] = poses[1 : len(gripper) + 1]
    actions[:, GRIPPER] = gripper
    return actions


def frame_actions(poses: np.ndarray, gripper: np.ndarray) -> np.ndarray:
    """One pose action per frame: the next frame's pose with this frame's gripper; the
    last frame holds its own pose. ``poses`` ``[N, 4]``, ``gripper`` ``[N]`` -> ``[N, 5]``."""
    poses, gripper = np.asarray(poses, dtype=np.float64), np.asarray(gripper, dtype=np.float64)
    return np.concatenate([next_pose_actions(poses, gripper[:-1]),
                           next_pose_actions(poses[[-1, -1]], gripper[-1:])])


def settled_commands(commands: np.ndarray, opening: np.ndarray, still: float = 0.005,
                     longest: int = 40) -> np.ndarray:
    """Gripper ``commands`` ``[T]`` with each change held back until the fingers, which
    start moving after it, come to rest again (``opening`` ``[T]``, the observed finger
    opening; "at rest": it moves less than ``still`` a step; at most ``longest`` steps).
    Reversed, a change must come that much earlier: the fingers take that long to follow."""
    commands = np.asarray(commands, dtype=np.float64)
    opening = np.asarray(opening, dtype=np.float64)
    out = commands.copy()
    for k in np.flatnonzero(np.abs(np.diff(commands)) > 0.5) + 1:
        moving = np.abs(np.diff(opening[k: k + longest + 1])) >= still  # step k + i -> k + i + 1
        started = np.flatnonzero(moving)
        if not len(started):
            continue
        stopped = np.flatnonzero(~moving[started[0]:])
        out[k: k + started[0] + (stopped[0] if len(stopped) else len(moving) - started[0])] = commands[k - 1]
    return out


def reverse_displacements(actions: np.ndarray, opening: np.ndarray) -> np.ndarray:
    """Meta-World displacement actions ``[T, 4]`` of an episode, reversed: reversed row t
    undoes original transition T-2-t (its displacement negated, so the commanded hand
    target retraces its path exactly; rebuilt from the observed hand positions instead,
    the hand's lag behind its target, several cm when moving, adds up and the grasp is
    missed), with the gripper command that led into the frame, each change moved by the
    fingers' travel time (:func:`settled_commands`); the last row holds still."""
    actions = np.asarray(actions, dtype=np.float64)
    commands = settled_commands(actions[:, -1], opening)
    out = np.zeros_like(actions, dtype=np.float32)
    out[:-1, :3] = -actions[:-1, :3][::-1]
    out[:, 3] = np.concatenate([commands[:1], commands[:-1]])[::-1]
    return out


def reverse_episode(ee_poses: np.ndarray, gripper: np.ndarray) -> np.ndarray:
    """Forward-task pose actions from a reverse-task episode.

    Args:
        ee_poses: [N, 4] recorded end-effector x, y, z, yaw (``obs["state"][6:10]``),
            ideally N = T + 1 (every observation including the final one).
        gripper: [T] gripper commands that were executed (``action[:, 4]``).

    Returns:
        [n, 5] float32 with n = min(N - 1, T): with rp/rg the reversed
        sequences, ``action[t, :4] = rp[t + 1]`` and ``action[t, 4] = rg[t]``.
    """
    poses = np.asarray(ee_poses, dtype=np.float64)
    grip = np.asarray(gripper, dtype=np.float64).reshape(-1)
    if poses.ndim != 2 or poses.shape[1] != 4:
        raise ValueError(f"ee_poses must have shape [N, 4], got {poses.shape}")
    if len(poses) < 2 or len(grip) < 1:
        raise ValueError(f"need at least 2 poses and 1 gripper command, got {len(poses)} and {len(grip)}")
    rp, rg = poses[::-1], grip[::-1]
    n = min(len(rp) - 1, len(rg))
    return next_pose_actions(rp[: n + 1], rg[:n])


def reverse_steps(steps: Mapping[str, np.ndarray], where: str = "episode") -> dict[str, np.ndarray]:
    """A stored pose-mode (or Meta-World delta-mode) episode (per-step arrays, row t =
    observation t and action t) reversed in time, as a forward-task demonstration:

    - observations, images and ``phase`` reversed;
    - ``action`` (and ``policy_action``) rebuilt by :func:`frame_actions` from the
      reversed poses (Meta-World: :func:`reverse_displacements`), with each frame's
      gripper the command that led into it, so reversed row t undoes original
      transition T-2-t: ``reverse_episode`` pairing;
    - ``reward`` 1 on the last row only (the reversed end is the easy task's start,
      the hard task's goal), ``progress`` 1 - the reversed progress,
      ``intervention`` False, ``timestamp`` kept in its (increasing) order.

    ValueError, naming ``where`` and the action mode, unless the actions are absolute poses
    or Meta-World's displacements.
    """
    delta = "state" in steps and action_mode_of(steps["action"], steps["state"]) == "delta"
    if not delta:
        check_pose_actions(steps, where)
    out = {k: np.ascontiguousarray(v[::-1]) for k, v in steps.items()
           if k not in ("action", "policy_action", "reward", "progress", "intervention", "timestamp")}
    if delta:
        out["action"] = reverse_displacements(steps["action"], np.asarray(steps["state"])[:, 3])
    else:
        commands = np.asarray(steps["action"])[:, GRIPPER]
        into_frame = np.concatenate([commands[:1], commands[:-1]])  # the command that led into frame t
        out["action"] = frame_actions(out["state"][:, EE_POSE], into_frame[::-1])
    if "policy_action" in steps:
        out["policy_action"] = out["action"].copy()
    if "reward" in steps:
        out["reward"] = np.zeros(len(out["action"]), dtype=np.float32)
        out["reward"][-1] = 1.0
    if "progress" in steps:
        out["progress"] = (1.0 - np.asarray(steps["progress"], dtype=np.float32))[::-1].copy()
    if "intervention" in steps:
        out["intervention"] = np.zeros(len(out["action"]), dtype=bool)
    if "timestamp" in steps:
        out["timestamp"] = np.asarray(steps["timestamp"]).copy()
    return out


def reverse_recorded(steps: Mapping[str, np.ndarray], meta: Mapping[str, Any], where: str = "episode"
                     ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """A successful easy-task episode (per-step arrays and store meta) reversed
    (:func:`reverse_steps`) into a demonstration of the forward partner: ``task`` and
    ``instruction`` those of the partner, ``source`` ``reversed``, the other fields kept
    (``created`` anew). ValueError listing the pairs for a task without one."""
    easy = str(meta["task"])
    hard = forward_task_of(easy)
    return reverse_steps(steps, where), {**{k: v for k, v in meta.items() if k != "created"}, "task": hard,
                                         "instruction": forward_instruction(easy, str(meta["instruction"])),
                                         "source": "reversed"}


def trim_after_release(steps: Mapping[str, np.ndarray], keep: int | None) -> dict[str, np.ndarray]:
    """``steps`` ending ``keep`` rows after the final release (the gripper command falling
    below 0.5), as a reversed easy episode should: what follows is the easy expert's
    approach, reversed into a return to rest after the hard task is done. ``None``, or an
    episode that never releases: unchanged. ValueError for a negative ``keep``."""
    if keep is None:
        return dict(steps)
    if keep < 0:
        raise ValueError(f"trim_after_release must be >= 0 rows, got {keep}")
    closed = np.asarray(steps["action"])[:, -1] > 0.5  # the gripper is last in pose and delta actions
    releases = np.flatnonzero(closed[:-1] & ~closed[1:]) + 1
    end = min(len(closed), int(releases[-1]) + keep) if len(releases) else len(closed)
    return {k: np.asarray(v)[:end] for k, v in steps.items()}


def reverse_into(out: Any, store: Any, episodes: Any, keys: Any = None, trim: int | None = None) -> int:
    """Append each successful episode of ``store`` in ``episodes`` to the store ``out``,
    reversed (:func:`reverse_recorded`) and, with ``trim``, ended ``trim`` rows after
    its final release (:func:`trim_after_release`); a failed easy episode does not end at
    the hard task's goal and is skipped. ``keys``: the per-step keys to write (default:
    all of ``store``'s). Returns the number written."""
    keys = tuple(keys or store.keys)
    written = 0
    for e in map(int, episodes):
        if not store.meta["success"][e]:
            continue
        episode = store.episode(e)
        steps, meta = reverse_recorded({k: episode["steps"][k] for k in keys}, episode["meta"],
                                       where=f"episode {e} of {getattr(store, 'path', 'the store')}")
        out.append_episode(trim_after_release(steps, trim), meta)
        written += 1
    return written


@dataclass
class RecordedEpisode:
    """What ``record_expert_episode`` keeps: enough to reverse and replay."""

    task: str
    seed: int
    ee_poses: np.ndarray  # [T + 1, 4]
    actions: np.ndarray  # [T, 5]
    success: bool
    final_state: np.ndarray
    infos: list[dict[str, Any]] = field(default_factory=list)


def record_expert_episode(task: str, seed: int, noise: float = 0.0, env: TabletopEnv | None = None) -> RecordedEpisode:
    """Run the scripted expert of ``task`` for one episode (no cameras), recorded as demos are."""
    from robot_learn.data import EpisodeRecorder

    env = env if env is not None else make_env(task, cameras=())
    recorder = EpisodeRecorder(("state",))
    final_obs, infos = run_expert(env, make_expert(task, noise=noise, seed=seed), seed, recorder)
    steps = recorder.steps()
    poses = np.concatenate([steps["state"][:, EE_POSE], final_obs["state"][None, EE_POSE]])
    return RecordedEpisode(task, seed, poses, steps["action"], bool(infos[-1]["success"]),
                           env.unwrapped.get_state(), infos)


def replay_reversed(episode: RecordedEpisode, env: TabletopEnv | None = None) -> dict[str, Any]:
    """Replay a reverse-task episode backwards in its forward partner task.

    Returns ``{"success", "steps", "actions", "observations", "infos"}``; the
    forward env runs until its success test passes or the actions run out.
    """
    env = env if env is not None else make_env(forward_task_of(episode.task), cameras=())
    actions = reverse_episode(episode.ee_poses, episode.actions[:, GRIPPER])
    obs = env.unwrapped.reset_to_state(episode.final_state)
    observations, infos, success = [obs], [], False
    for action in actions:
        obs, _, terminated, _, info = env.step(action)
        observations.append(obs)
        infos.append(info)
        if terminated:
            success = True
            break
    return {"success": success, "steps": len(infos), "actions": actions[: len(infos)],
            "observations": observations, "infos": infos}
