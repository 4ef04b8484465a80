"""Rendered scenes with privileged labels, for pretraining frame encoders.

A frame encoder learns *where this scene's objects are* from how many distinct
layouts it sees, and a reset costs one render, not an expert episode. So the frame
set mixes two kinds of frame:

- **resets**: a fresh layout per frame, with the arm moved to a random pose (random
  grasp centre, yaw and gripper opening) anywhere above the table, so the encoder
  sees the arm everywhere it can be and learns not to confuse it with an object; a
  ``near_object`` fraction of them just around the object to move instead, where a
  grasp needs the most precision and the wrist camera sees the object large; a
  ``held`` fraction with the object to move held in the closed gripper, anywhere
  above the table; and a ``placed`` fraction with it already where the task puts it;
- **expert steps**: every ``every``-th step of noisy expert episodes, which cover
  what resets cannot (an object being grasped, lifted, released).

Each frame carries the observation a policy gets (cameras, ``state``,
``instruction``) and ``TabletopEnv.scene_labels()``, which no policy reads.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import queue
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import mujoco
import numpy as np

from . import arm
from .base_env import SCENE_LABELS
from .registry import make_env, make_expert, task_spec
from .rendering import CameraRenderer, check_cameras
from .task_base import quat_of_yaw

# Bumped whenever the frames this module renders change, so encoders pretrained on the
# old frames are not reused for the new ones.
SCENE_FRAMES_VERSION = 4  # 4: the labels gained goal_x, goal_y, goal_z
# What a recorded scene keeps for rendering (positions, velocities, mocap bodies...), and
# how many scenes go to a rendering worker at a time.
RENDER_STATE = mujoco.mjtState.mjSTATE_INTEGRATION
RENDER_CHUNK = 256
# First seed of the reset scenes and of the expert episodes, away from the evaluation seeds (from
# 1,000,000), so an encoder pretrained here has not seen the layouts a policy is evaluated on
# (evaluating on these seeds is warned of: overlaps_pretraining_seeds).
RESET_SEEDS = 2_000_000
EXPERT_SEEDS = 3_000_000
# Random grasp-centre box for reset frames (metres), inside the arm's reach, and the
# spread of the near-object poses around the object to move.
ARM_LOW = np.array([0.04, -0.26, 0.02])
ARM_HIGH = np.array([0.36, 0.26, 0.20])
NEAR_OBJECT_XY_SD = 0.03
NEAR_OBJECT_Z = (0.015, 0.12)
# Held frames: the object's offset from the grasp centre (metres, degrees of yaw).
HELD_XY_SD = 0.004
HELD_YAW_SD = 8.0


def overlaps_pretraining_seeds(first: int, count: int) -> bool:
    """Whether seeds ``first .. first + count - 1`` reach into the seeds pretraining scenes use
    (resets from ``RESET_SEEDS``, expert episodes from ``EXPERT_SEEDS``, each under a million)."""
    return first < EXPERT_SEEDS + 1_000_000 and first + count > RESET_SEEDS


@dataclass
class SceneFrames:
    """``N`` frames: images per camera (uint8 ``[N, H, W, 3]``), ``state`` ``[N, 10]``,
    ``labels`` ``[N, len(SCENE_LABELS)]``, and per frame its instruction and task."""

    images: dict[str, np.ndarray]
    state: np.ndarray
    labels: np.ndarray
    instruction: list[str]
    task: list[str]
    label_names: tuple[str, ...] = field(default=SCENE_LABELS)

    def __len__(self) -> int:
        return len(self.labels)


def render_scene_frames(tasks: Sequence[str], resets: int, expert_episodes: int = 0, *,
                        cameras: Sequence[str] = ("front", "wrist"), image_size: int = 96,
                        seed: int = 0, noise: float = 1.0, every: int = 3, near_object: float = 0.0,
                        held: float = 0.0, placed: float = 0.0, progress_bar: bool = False,
                        workers: int | None = None) -> SceneFrames:
    """Render ``resets`` reset frames (``near_object``, ``held`` and ``placed`` fractions
    of them with the arm around the object to move, holding it, or with the object
    where the task puts it) and the frames of ``expert_episodes`` expert episodes per
    task (every ``every``-th step), tasks taking turns.

    Seeds start at ``seed`` and never meet the demo seeds (0, 1, ...) or the evaluation
    seeds (from 1,000,000) when ``seed`` is left at its default of 0: resets use
    ``RESET_SEEDS + seed + i`` (2,000,000) and expert episodes ``EXPERT_SEEDS + seed + i``
    (3,000,000).

    The calling thread poses the scenes and records each one's simulator state; ``workers``
    threads (default: :func:`default_render_workers`), each with its own renderer for the whole
    run, render those states in chunks, so the frames are the same whatever the number of workers. Rendering
    is most of the time and releases the GIL; one renderer keeps about one core busy.
    (Threads, not processes: a forked worker hangs once its parent holds an EGL context,
    and a spawned one re-imports the caller's main module.)
    """
    cameras = check_cameras(tuple(cameras))
    if not cameras:
        raise ValueError("render_scene_frames needs at least one camera")
    if resets < 0 or expert_episodes < 0 or every < 1:
        raise ValueError(f"resets and expert_episodes must be >= 0 and every >= 1, got {resets}, "
                         f"{expert_episodes}, {every}")
    fractions = {"near_object": near_object, "held": held, "placed": placed}
    if min(fractions.values()) < 0 or sum(fractions.values()) > 1:
        raise ValueError(f"near_object, held and placed are fractions of the resets: each >= 0 and together "
                         f"<= 1, got {fractions}")
    workers = default_render_workers() if workers is None else int(workers)
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    tasks = [task_spec(t).name for t in tasks]  # ValueError lists the valid tasks
    envs = {t: make_env(t, cameras=(), max_steps=None) for t in tasks}
    rows: dict[str, list] = {"state": [], "labels": [], "instruction": [], "task": []}
    pending: list[tuple[str, np.ndarray, np.ndarray]] = []  # (task, simulator state, geom colours)
    rendered: list[dict[str, np.ndarray]] = []  # images per chunk of pending scenes, in order

    def record(t: str) -> None:
        env = envs[t]
        obs = env._obs()
        state = np.empty(mujoco.mj_stateSize(env.model, RENDER_STATE))
        mujoco.mj_getState(env.model, env.data, state, RENDER_STATE)
        pending.append((t, state, env.model.geom_rgba.copy()))
        rows["state"].append(obs["state"])
        rows["labels"].append(env.scene_labels())
        rows["instruction"].append(obs["instruction"])
        rows["task"].append(t)
        bar.total = max(bar.total, len(rows["task"]))  # an expert episode's frames count as they come
        if len(pending) == RENDER_CHUNK:
            flush()

    def flush(last: bool = False) -> None:
        """Render the pending scenes: in the pool (started with the first full chunk, so a few
        scenes never pay for starting threads), or here."""
        nonlocal pool, inline
        if not pending:
            return
        scenes = list(pending)
        pending.clear()
        if pool is None and workers > 1 and not last:
            pool = RenderPool(workers, cameras, image_size, count)
        if pool is not None:
            pool.submit(scenes)
            return
        inline = inline or SceneRenderer(cameras, image_size)
        rendered.append(inline.render(scenes))
        count(len(scenes))

    def count(n: int) -> None:  # from the rendering threads too: tqdm's counter has no lock of its own
        with bar_lock:
            bar.update(n)

    from tqdm import tqdm

    pool: RenderPool | None = None
    inline: SceneRenderer | None = None
    bar_lock = threading.Lock()
    try:
        # The bar counts rendered scenes (posing runs ahead of the rendering threads).
        with tqdm(total=resets, desc="render scenes", unit="scene", disable=not progress_bar) as bar:
            rng = np.random.default_rng(seed)
            for i in range(resets):
                t = tasks[i % len(tasks)]
                env = envs[t]
                env.reset(seed=RESET_SEEDS + seed + i)
                _pose_scene(env, rng, near_object, held, placed)
                record(t)
            for i in range(expert_episodes * len(tasks)):
                t = tasks[i % len(tasks)]
                env, episode_seed = envs[t], EXPERT_SEEDS + seed + i
                env.reset(seed=episode_seed)
                expert = make_expert(t, noise=noise, seed=episode_seed)
                expert.reset(env)
                for step in range(env.max_steps):
                    if step % every == 0:
                        record(t)
                    _obs, _r, terminated, truncated, _info = env.step(expert.act(None, env))
                    if terminated or truncated:
                        break
            flush(last=True)
            if pool is not None:
                rendered, pool = pool.finish(), None
    finally:
        if pool is not None:  # an error while posing: the workers stop at their next chunk
            pool.abandon()
        if inline is not None:
            inline.close()
        for env in envs.values():
            env.close()
    return SceneFrames(images={c: np.concatenate([r[c] for r in rendered]) for c in cameras},
                       state=np.stack(rows["state"]).astype(np.float32),
                       labels=np.stack(rows["labels"]).astype(np.float32),
                       instruction=rows["instruction"], task=rows["task"])


def default_render_workers() -> int:
    """Rendering threads by default: one per CPU (at most 4) with a headless GL (EGL, OSMesa),
    whose contexts live on any thread; 1 with a windowed one (GLFW), whose contexts must be made
    on the main thread."""
    if os.environ.get("MUJOCO_GL", "").lower() not in ("egl", "osmesa"):
        return 1
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(4, cpus))


class SceneRenderer:
    """Images of recorded scenes (task, ``RENDER_STATE`` vector, ``geom_rgba``), one uint8
    ``[N, H, W, 3]`` array per camera: each scene's state and colours are set on the task's
    model and data, kinematics recomputed, and the cameras rendered. One env and renderer per
    task, made at the task's first scene and kept until :meth:`close`, on the thread that uses
    it (a GL context costs as much as dozens of renders, so it is made once, not per chunk)."""

    def __init__(self, cameras: tuple[str, ...], image_size: int) -> None:
        self.cameras, self.image_size = cameras, image_size
        self.envs: dict[str, Any] = {}
        self.renderers: dict[str, CameraRenderer] = {}

    def render(self, scenes: list[tuple[str, np.ndarray, np.ndarray]]) -> dict[str, np.ndarray]:
        images: dict[str, list] = {c: [] for c in self.cameras}
        for t, state, rgba in scenes:
            if t not in self.envs:
                self.envs[t] = make_env(t, cameras=(), max_steps=None)
                self.renderers[t] = CameraRenderer(self.envs[t].model, self.image_size, self.image_size)
            env = self.envs[t]
            env.model.geom_rgba[:] = rgba
            mujoco.mj_setState(env.model, env.data, state, RENDER_STATE)
            mujoco.mj_forward(env.model, env.data)
            for camera, frame in self.renderers[t].render(env.data, self.cameras).items():
                images[camera].append(frame)
        size = self.image_size
        return {c: np.stack(v) if v else np.zeros((0, size, size, 3), np.uint8) for c, v in images.items()}

    def close(self) -> None:
        """Close every renderer and env, even when one of them raises (ExitStack runs them all)."""
        with contextlib.ExitStack() as stack:
            for t, env in self.envs.items():
                stack.callback(env.close)
                stack.callback(self.renderers[t].close)
            self.envs, self.renderers = {}, {}


class RenderPool:
    """``workers`` threads rendering chunks of scenes from a queue, each with its own
    :class:`SceneRenderer` for its whole life; ``rendered(n)`` is called from a worker after
    each chunk of ``n`` scenes (a progress bar's update)."""

    def __init__(self, workers: int, cameras: tuple[str, ...], image_size: int,
                 rendered: Callable[[int], Any]) -> None:
        self.jobs: queue.Queue = queue.Queue()
        self.images: dict[int, dict[str, np.ndarray]] = {}
        self.submitted = 0
        self.stopping = threading.Event()
        self.executor = concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="render")
        self.workers = [self.executor.submit(self._work, cameras, image_size, rendered) for _ in range(workers)]

    def _work(self, cameras: tuple[str, ...], image_size: int, rendered: Callable[[int], Any]) -> None:
        renderer = SceneRenderer(cameras, image_size)
        try:
            while not self.stopping.is_set() and (job := self.jobs.get()) is not None:
                index, scenes = job
                self.images[index] = renderer.render(scenes)
                rendered(len(scenes))
        finally:
            renderer.close()

    def submit(self, scenes: list[tuple[str, np.ndarray, np.ndarray]]) -> None:
        """Queue a chunk; a worker that has already failed raises its error here, so posing
        stops at the next chunk rather than running on to the end."""
        for worker in self.workers:
            if worker.done():  # before finish(), a worker only ends by an error
                worker.result()
        self.jobs.put((self.submitted, scenes))
        self.submitted += 1

    def finish(self) -> list[dict[str, np.ndarray]]:
        """Every submitted chunk's images, in submission order (a worker's error is raised here)."""
        self._stop()
        for worker in self.workers:
            worker.result()
        return [self.images[i] for i in range(self.submitted)]

    def abandon(self) -> None:
        """Stop without the remaining chunks (after an error elsewhere); workers' errors are dropped."""
        self.stopping.set()
        self._stop()

    def _stop(self) -> None:
        for _ in self.workers:
            self.jobs.put(None)
        self.executor.shutdown(wait=True)


def _pose_scene(env, rng: np.random.Generator, near_object: float, held: float, placed: float) -> None:
    """Put the arm at a random top-down pose (kinematics only: no physics step):
    anywhere, just around the object to move (probability ``near_object``), holding it
    (``held``), or anywhere with the object where the task puts it (``placed``)."""
    # (No draw at all when every fraction is 0, so such frames match the first version's.)
    mode = "anywhere"
    if near_object + held + placed > 0:
        u = rng.random() - (1.0 - near_object - held - placed)
        mode = ("anywhere" if u < 0 else "near" if u < near_object else
                "held" if u < near_object + held else "placed")
    if mode == "near":
        centre = env.object_pose("move")[0]
        x, y = centre[:2] + rng.normal(0.0, NEAR_OBJECT_XY_SD, 2)
        z = centre[2] + rng.uniform(*NEAR_OBJECT_Z)
    else:
        x, y, z = rng.uniform(ARM_LOW, ARM_HIGH)
    yaw = rng.uniform(-np.pi, np.pi)
    kind = env.task.move_kind
    if mode == "held":
        z = max(z, kind.rest_z + kind.grasp_dz + 0.01)
        grip = min(arm.GRIPPER_OPEN, float(env.model.geom_size[env.layout.role_geoms["move"][0]][0]))
    else:
        grip = arm.gripper_target(rng.uniform(0.0, 1.0))
    joints = arm.top_down_ik(x, y, z, yaw)
    env.data.qpos[env.layout.arm_qpos] = np.append(joints, grip)
    env.data.qpos[env.model.joint("gripper_mirror").qposadr[0]] = grip
    env.data.ctrl[:] = np.append(joints, grip)
    mujoco.mj_forward(env.model, env.data)
    if mode == "held":  # between the fingers where the arm really is (the IK clamps to its reach)
        tcp, tcp_yaw = env.tcp_pose()
        offset = np.append(rng.normal(0.0, HELD_XY_SD, 2), -kind.grasp_dz)
        _set_object(env, tcp + offset, tcp_yaw + rng.normal(0.0, np.radians(HELD_YAW_SD)))
    elif mode == "placed":
        goal = env.task.move_goal(env) + np.append(rng.normal(0.0, 0.005, 2), 0.0)
        _set_object(env, goal, env.task.goal_yaw(env) + rng.normal(0.0, np.radians(HELD_YAW_SD)))


def _set_object(env, position: np.ndarray, yaw: float) -> None:
    """Move the object to move (a free body) to ``position`` and ``yaw``."""
    a = env.layout.free_qpos["move"]
    env.data.qpos[a:a + 3] = position
    env.data.qpos[a + 3:a + 7] = quat_of_yaw(yaw)
    mujoco.mj_forward(env.model, env.data)
