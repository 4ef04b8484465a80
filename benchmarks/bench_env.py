"""Speed of the tabletop envs, measured side by side with bare MuJoCo.

1. ``env.step`` without cameras vs raw ``mujoco.mj_step`` (same model, same
   50 substeps, same control sequence): the env's Python overhead.
2. Camera frames through the env's renderer vs a bare ``mujoco.Renderer`` on
   the same scene, at 96x96 and 128x128.
3. Scripted-expert demo collection in frames/s, without cameras and with two
   96x96 cameras.
4. With ``--scene-frames N``: the frame encoder's pretraining scenes (``N`` resets in the
   ``diffusion_pixels`` mix, two 96 px cameras) rendered by one thread against ``--workers``
   threads, alternating, with a check that the frames are the same.
5. With ``--collect-demos N``: ``collect_demos`` of ``N`` expert episodes into a store, one
   thread against ``--workers`` (each with its own env), alternating, with two 96 px cameras
   and without, with a check that the stores hold the same arrays.

Run: MUJOCO_GL=egl .venv/bin/python benchmarks/bench_env.py [--repeats 5] [--task stack]
     MUJOCO_GL=egl .venv/bin/python benchmarks/bench_env.py --task bin_place --scene-frames 2000 --repeats 3
     MUJOCO_GL=egl .venv/bin/python benchmarks/bench_env.py --task bin_place --collect-demos 30 --repeats 3
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

os.environ.setdefault("MUJOCO_GL", "egl")

import mujoco  # noqa: E402

from robot_learn.envs import make_env, record_expert_episode  # noqa: E402
from robot_learn.envs.base_env import N_SUBSTEPS  # noqa: E402


def median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench_step(task: str, repeats: int) -> None:
    env = make_env(task, cameras=())
    episode = record_expert_episode(task, seed=0, env=env)
    actions = episode.actions
    # The ctrl each action produced, for the raw loop.
    env.reset(seed=0)
    start = env.unwrapped.get_state()
    ctrls = []
    for a in actions:
        env.step(a)
        ctrls.append(env.unwrapped.data.ctrl.copy())
    model, data = env.unwrapped.model, mujoco.MjData(env.unwrapped.model)
    spec = mujoco.mjtState.mjSTATE_INTEGRATION
    physics = start[-mujoco.mj_stateSize(model, spec):]

    def run_env():
        env.unwrapped.set_state(start)
        for a in actions:
            env.step(a)

    def run_raw():
        mujoco.mj_setState(model, data, physics, spec)
        for c in ctrls:
            data.ctrl[:] = c
            mujoco.mj_step(model, data, nstep=N_SUBSTEPS)

    # Interleave so both see the same machine load.
    t_env, t_raw = [], []
    for _ in range(repeats):
        t_env.append(median_time(run_env, 1))
        t_raw.append(median_time(run_raw, 1))
    n = len(actions)
    env_rate, raw_rate = n / statistics.median(t_env), n / statistics.median(t_raw)
    print(f"[step] task={task} control steps/episode={n} substeps={N_SUBSTEPS} repeats={repeats}")
    print(f"  env.step (no cameras)      {env_rate:9.1f} steps/s  ({1e3 / env_rate:.3f} ms/step)")
    print(f"  raw mj_step x{N_SUBSTEPS}           {raw_rate:9.1f} steps/s  ({1e3 / raw_rate:.3f} ms/step)")
    print(f"  ratio env/raw              {env_rate / raw_rate:9.3f}   (goal >= 0.5)")


def bench_render(task: str, repeats: int, frames: int) -> None:
    for size in (96, 128):
        env = make_env(task, cameras=("front", "wrist"), image_size=size)
        env.reset(seed=0)
        ours = env.unwrapped._camera_renderer
        data = env.unwrapped.data
        bare = mujoco.Renderer(env.unwrapped.model, size, size)  # default flags

        def run_ours():
            for _ in range(frames):
                ours.render(data, ("front", "wrist"))

        def run_bare():
            for _ in range(frames):
                for cam in ("front", "wrist"):
                    bare.update_scene(data, camera=cam)
                    bare.render()

        run_ours(), run_bare()  # warm up both GL contexts
        t_ours, t_bare = [], []
        for _ in range(repeats):
            t_ours.append(median_time(run_ours, 1))
            t_bare.append(median_time(run_bare, 1))
        ours_fps = 2 * frames / statistics.median(t_ours)
        bare_fps = 2 * frames / statistics.median(t_bare)
        print(f"[render] {size}x{size}, cameras front+wrist, {frames} frame pairs x {repeats} repeats")
        print(f"  env renderer (no shadows/reflections) {ours_fps:8.1f} images/s")
        print(f"  bare mujoco.Renderer (defaults)       {bare_fps:8.1f} images/s")
        print(f"  ratio env/bare                        {ours_fps / bare_fps:8.3f}")
        bare.close()
        env.close()


def bench_collect(task: str, repeats: int, episodes: int) -> None:
    for cameras in ((), ("front", "wrist")):
        env = make_env(task, cameras=cameras, image_size=96)
        frames = 0

        def collect():
            nonlocal frames
            for seed in range(episodes):
                frames += len(record_expert_episode(task, seed, env=env).actions)

        times = []
        counts = []
        for _ in range(repeats):
            frames = 0
            times.append(median_time(collect, 1))
            counts.append(frames)
        fps = [c / t for c, t in zip(counts, times)]
        label = "no cameras" if not cameras else "front+wrist 96x96"
        print(f"[collect] expert demos, {episodes} episodes x {repeats} repeats, {label}: "
              f"{statistics.median(fps):8.1f} frames/s")
        env.close()


def bench_scene_frames(task: str, repeats: int, resets: int, workers: int) -> None:
    import numpy as np

    from robot_learn.envs.scene_frames import render_scene_frames

    mix = dict(cameras=("front", "wrist"), image_size=96, held=0.25, placed=0.1)  # the diffusion_pixels preset
    times: dict[int, list[float]] = {1: [], workers: []}
    frames: dict[int, object] = {}
    for _ in range(repeats):
        for k in times:
            t0 = time.perf_counter()
            frames[k] = render_scene_frames([task], resets, workers=k, **mix)
            times[k].append(time.perf_counter() - t0)
    same = all(np.array_equal(frames[1].images[c], frames[workers].images[c]) for c in mix["cameras"])
    ratios = sorted(a / b for a, b in zip(times[1], times[workers]))
    print(f"[scene frames] {resets} resets x 2 cameras, {repeats} repeats: 1 thread "
          f"{statistics.median(times[1]):.2f} s, {workers} threads {statistics.median(times[workers]):.2f} s, "
          f"speed-up median {statistics.median(ratios):.2f}x (range {ratios[0]:.2f}-{ratios[-1]:.2f}); "
          f"frames identical: {same}")


def bench_collect_workers(task: str, repeats: int, episodes: int, workers: int) -> None:
    import tempfile
    from pathlib import Path

    import numpy as np

    from robot_learn.data import EpisodeStore
    from robot_learn.envs.demos import collect_demos

    for cameras in (("front", "wrist"), ()):
        times: dict[int, list[float]] = {1: [], workers: []}
        with tempfile.TemporaryDirectory() as tmp:
            for r in range(repeats):
                for k in times:
                    t0 = time.perf_counter()
                    collect_demos(task, episodes, Path(tmp) / f"{k}_{r}.zarr", cameras=cameras, image_size=96,
                                  progress_bar=False, workers=k)
                    times[k].append(time.perf_counter() - t0)
            a, b = (EpisodeStore.open(Path(tmp) / f"{k}_0.zarr", mode="r") for k in times)
            same = set(a.schema) == set(b.schema) and all(np.array_equal(a.read(key), b.read(key)) for key in a.schema)
        ratios = sorted(x / y for x, y in zip(times[1], times[workers]))
        label = "front+wrist 96x96" if cameras else "no cameras"
        print(f"[collect threads] {episodes} episodes, {label}, {repeats} repeats: 1 thread "
              f"{statistics.median(times[1]):.2f} s, {workers} threads {statistics.median(times[workers]):.2f} s, "
              f"speed-up median {statistics.median(ratios):.2f}x (range {ratios[0]:.2f}-{ratios[-1]:.2f}); "
              f"stores identical: {same}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="stack")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--frames", type=int, default=50)
    parser.add_argument("--episodes", type=int, default=3)
    parser.add_argument("--scene-frames", type=int, default=0,
                        help="only time rendering this many pretraining scenes, 1 thread against --workers")
    parser.add_argument("--collect-demos", type=int, default=0,
                        help="only time collect_demos of this many episodes, 1 thread against --workers")
    parser.add_argument("--workers", type=int, default=2, help="threads timed against one (>= 2)")
    args = parser.parse_args()
    if args.workers < 2 and (args.scene_frames or args.collect_demos):
        parser.error(f"--workers must be >= 2 (it is timed against one thread), got {args.workers}")
    print(f"config: task={args.task} repeats={args.repeats} mujoco={mujoco.__version__} "
          f"MUJOCO_GL={os.environ.get('MUJOCO_GL')} python={platform.python_version()} cpus={os.cpu_count()}")
    if args.scene_frames:
        bench_scene_frames(args.task, args.repeats, args.scene_frames, args.workers)
        return
    if args.collect_demos:
        bench_collect_workers(args.task, args.repeats, args.collect_demos, args.workers)
        return
    bench_step(args.task, args.repeats)
    bench_render(args.task, args.repeats, args.frames)
    bench_collect(args.task, args.repeats, args.episodes)


if __name__ == "__main__":
    main()
