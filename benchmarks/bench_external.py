"""External benchmarks (Meta-World v3, PushT, ALOHA) through our adapters. Run in .venv-bench:

    MUJOCO_GL=egl OMP_NUM_THREADS=1 .venv-bench/bin/python benchmarks/bench_external.py

(a) scripted expert success per task (Meta-World's policies; our PushT pusher; our
    ALOHA planner with ``--aloha transfer-cube insertion``, expert only) on held-out
    seeds, and the Meta-World render cost with shadows on and off;
(b) per Meta-World task: collect scripted demos (state only), train our diffusion
    state policy for ``--train-steps`` on CPU, evaluate on held-out seeds;
(c) the same for PushT (state).
Success rates print with Wilson 95% intervals, plus the time each part took.
``--quick`` runs a tiny version of everything to check that it works.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")

import numpy as np  # noqa: E402
import torch  # noqa: E402

METAWORLD = ("peg-insert-side", "peg-unplug-side", "pick-place", "door-open", "drawer-open", "button-press")
EVAL_SEED = 1_000_000


def expert_success(task: str, episodes: int, max_steps: int, offset: int = 0) -> dict:
    """Zero-noise expert on seeds EVAL_SEED + offset.. (not the demo seeds)."""
    from robot_learn.envs import make_env, make_expert
    from robot_learn.evaluation import wilson_interval

    env = make_env(task, cameras=(), max_steps=max_steps)
    wins, lengths, t0 = 0, [], time.perf_counter()
    for i in range(offset, offset + episodes):
        expert = make_expert(task, seed=EVAL_SEED + i)
        obs, _ = env.reset(seed=EVAL_SEED + i)
        expert.reset(env)
        for step in range(1, max_steps + 1):
            obs, _, terminated, truncated, info = env.step(expert.act(obs, env))
            if terminated or truncated:
                break
        wins += info["success"]
        lengths.append(step)
    env.close()
    lo, hi = wilson_interval(wins, episodes)
    return {"task": task, "successes": int(wins), "episodes": episodes, "ci": [lo, hi],
            "mean_length": float(np.mean(lengths)), "seconds": time.perf_counter() - t0}


def render_cost(size: int = 96, frames: int = 50) -> dict:
    """ms per Meta-World frame (corner2) with shadows + reflections on and off."""
    import mujoco

    from robot_learn.envs import make_env

    env = make_env("metaworld/peg-unplug-side", cameras=())
    env.reset(seed=0)
    renderer = mujoco.Renderer(env.unwrapped.mw.model, size, size)
    renderer.update_scene(env.unwrapped.mw.data, camera="corner2")
    renderer.render()  # warm-up: GL context and uploads
    out = {}
    for on in (True, False):
        renderer.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = on
        renderer.scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = on
        t0 = time.perf_counter()
        for _ in range(frames):
            renderer.update_scene(env.unwrapped.mw.data, camera="corner2")
            renderer.render()
        out["shadows_on_ms" if on else "shadows_off_ms"] = 1000 * (time.perf_counter() - t0) / frames
    renderer.close()
    env.close()
    return out


def train_and_evaluate(task: str, args: argparse.Namespace, workdir: Path) -> dict:
    """Collect ``args.demos`` expert demos, train the diffusion state policy, evaluate it."""
    from robot_learn.data import EpisodeStore, WindowSampler
    from robot_learn.envs.demos import collect_demos
    from robot_learn.evaluation import evaluate
    from robot_learn.evaluation.task_fit import fit_policy_to_task
    from robot_learn.policies import diffusion_state_config
    from robot_learn.training import TrainConfig, Trainer, build_policy_for_view

    t0 = time.perf_counter()
    path = workdir / task.replace("/", "_") / "demos.zarr"
    summary = collect_demos(task, args.demos, path, cameras=(), max_steps=args.max_steps, progress_bar=False)
    collect_s = time.perf_counter() - t0
    if summary.stored == 0:
        return {"task": task, "demos": 0, "demo_attempts": summary.attempted, "collect_s": collect_s}
    demos = EpisodeStore.open(path).view(success=True)
    config = fit_policy_to_task(diffusion_state_config(), task)
    policy = build_policy_for_view(config, demos)
    sampler = WindowSampler(demos, obs_keys=policy.training_obs_keys, obs_horizon=policy.obs_horizon,
                            action_horizon=policy.action_horizon, batch_size=args.batch_size, seed=0)
    cfg = TrainConfig(steps=args.train_steps, batch_size=args.batch_size, lr=1e-3,
                      warmup_steps=min(200, args.train_steps // 10), ckpt_every=0, log_every=100, device="cpu",
                      num_threads=1, progress_bar=False, out_dir=str(workdir / task.replace("/", "_") / "run"))
    trainer = Trainer(policy, sampler, cfg)
    fit = trainer.fit()
    s = evaluate(trainer.ema_policy, task, episodes=args.eval_episodes, seed=EVAL_SEED, workers=1, videos=0,
                 max_steps=args.max_steps, vectorization="sync").summary
    return {"task": task, "demos": demos.num_episodes, "demo_attempts": summary.attempted,
            "collect_s": collect_s, "train_steps": args.train_steps, "train_s": fit["time"],
            "loss": fit["loss"], "successes": s.successes, "episodes": s.episodes,
            "ci": [s.ci_low, s.ci_high], "mean_progress": s.mean_progress,
            "total_s": time.perf_counter() - t0}


def fmt(r: dict) -> str:
    rate = r["successes"] / r["episodes"]
    return f"{rate:6.1%} ({r['successes']}/{r['episodes']}), 95% CI [{r['ci'][0]:.1%}, {r['ci'][1]:.1%}]"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tasks", nargs="*", default=list(METAWORLD), help="Meta-World tasks (none: PushT only)")
    p.add_argument("--expert-episodes", type=int, default=50)
    p.add_argument("--expert-offset", type=int, default=0, help="part (a) starts at seed 1000000 + this "
                   "(to split a slow task's seeds over several runs)")
    p.add_argument("--demos", type=int, default=50)
    p.add_argument("--train-steps", type=int, default=3000)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--eval-episodes", type=int, default=50)
    p.add_argument("--max-steps", type=int, default=300)
    p.add_argument("--skip-training", action="store_true", help="only part (a)")
    p.add_argument("--skip-experts", action="store_true", help="skip part (a) and the render timing")
    p.add_argument("--no-pusht", action="store_true")
    p.add_argument("--aloha", nargs="*", default=[], help="ALOHA tasks for part (a) only (no learned policy)")
    p.add_argument("--quick", action="store_true", help="tiny run that checks everything works")
    p.add_argument("--out", default=None, help="write the results as JSON here")
    args = p.parse_args()
    if args.quick:
        args.tasks, args.expert_episodes, args.demos = ["peg-unplug-side"], 2, 2
        args.train_steps, args.batch_size, args.eval_episodes = 10, 8, 1
    torch.set_num_threads(1)
    tasks = [f"metaworld/{t}" for t in args.tasks] + ([] if args.no_pusht else ["pusht"])
    print("config:", json.dumps(vars(args)))
    results: dict = {"config": vars(args), "expert": [], "learned": []}
    if not args.skip_experts and args.tasks:
        results["render"] = render_cost()
        print(f"\nMeta-World render, 96 px corner2: shadows+reflections on {results['render']['shadows_on_ms']:.1f} ms, "
              f"off {results['render']['shadows_off_ms']:.1f} ms per frame")
    if not args.skip_experts:
        print("\n(a) scripted expert success (held-out seeds)")
    for task in [] if args.skip_experts else tasks + [f"aloha/{t}" for t in args.aloha]:
        r = expert_success(task, args.expert_episodes, args.max_steps, args.expert_offset)
        results["expert"].append(r)
        print(f"  {task:32s} {fmt(r)}  mean length {r['mean_length']:.0f}  ({r['seconds']:.0f} s, "
              f"{r['seconds'] / r['episodes']:.1f} s/episode)", flush=True)
    if not args.skip_training:
        print(f"\n(b, c) diffusion state policy: {args.demos} demos, {args.train_steps} steps, "
              f"batch {args.batch_size}, {args.eval_episodes} eval episodes")
        with tempfile.TemporaryDirectory() as tmp:
            for task in tasks:
                r = train_and_evaluate(task, args, Path(tmp))
                results["learned"].append(r)
                if not r["demos"]:
                    print(f"  {task:32s} no successful demo in {r['demo_attempts']} attempts: not trained")
                    continue
                print(f"  {task:32s} {fmt(r)}  progress {r['mean_progress']:.2f}; {r['demos']} demos "
                      f"(collect {r['collect_s']:.0f} s), train {r['train_s']:.0f} s, total {r['total_s']:.0f} s",
                      flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2, default=float))


if __name__ == "__main__":
    main()
