"""How near a saved policy gets to the cube on ALOHA transfer-cube, beyond success.

    MUJOCO_GL=egl OMP_NUM_THREADS=1 .venv-bench/bin/python benchmarks/diag_aloha_cube_contact.py POLICY_DIR [--episodes 20] [--start 0]

Per held-out episode (seeds 1,000,000 + start, ...; the evaluation's): success, final
and peak progress (gym-aloha's reward / 4), the closest the right fingertips came to
the cube's centre, how far the cube was pushed on the table and how high it was lifted.
A policy whose final progress is 0 may still reach or move the cube; this tells them apart.
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np

SEED = 1_000_000
TIP = 0.15  # fingertip centre along the gripper link's x axis (envs/external/aloha_expert.py)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("policy_dir")
    p.add_argument("--episodes", type=int, default=20)
    p.add_argument("--start", type=int, default=0, help="first seed: 1,000,000 + start")
    args = p.parse_args()

    import torch

    from robot_learn.envs import make_env
    from robot_learn.evaluation import wilson_interval
    from robot_learn.policies.checkpoint import load_policy

    torch.set_num_threads(1)
    policy = load_policy(args.policy_dir).eval()
    env = make_env("aloha/transfer-cube", cameras=())
    physics = env.unwrapped._physics
    gripper = physics.model.body("vx300s_right/gripper_link").id
    generator = torch.Generator().manual_seed(0)
    rows = []
    for seed in range(SEED + args.start, SEED + args.start + args.episodes):
        obs, _ = env.reset(seed=seed)
        policy.reset()
        start = obs["env_state"][:3].copy()
        peak, closest, pushed, lifted = 0.0, np.inf, 0.0, 0.0
        with torch.inference_mode():
            while True:
                action = policy.select_action({k: obs[k][None] for k in policy.obs_shapes}, generator=generator)
                obs, _, terminated, truncated, info = env.step(action[0].numpy().astype(np.float32))
                tip = physics.data.xpos[gripper] + physics.data.xmat[gripper].reshape(3, 3)[:, 0] * TIP
                cube = obs["env_state"][:3]
                closest = min(closest, float(np.linalg.norm(tip - cube)))
                pushed = max(pushed, float(np.linalg.norm(cube[:2] - start[:2])))
                lifted = max(lifted, float(cube[2] - start[2]))
                peak = max(peak, info["progress"])
                if terminated or truncated:
                    break
        rows.append((info["success"], info["progress"], peak, closest, pushed, lifted))
        print(f"seed {seed}: success {info['success']}, progress final {info['progress']:.2f} peak {peak:.2f}, "
              f"closest fingertips-cube {closest:.3f} m, cube pushed {pushed:.3f} m, lifted {lifted:.3f} m", flush=True)
    env.close()
    n = len(rows)
    wins = sum(r[0] for r in rows)
    low, high = wilson_interval(wins, n)
    count = lambda i, at_least: sum(r[i] > at_least for r in rows)  # noqa: E731
    print(f"\n{n} episodes: success {wins}/{n} (95% CI [{low:.1%}, {high:.1%}]), "
          f"mean final progress {statistics.mean(r[1] for r in rows):.3f}, mean peak {statistics.mean(r[2] for r in rows):.3f}; "
          f"touched (peak > 0) {count(2, 0.0)}, cube pushed > 1 cm {count(4, 0.01)}, lifted > 1 cm {count(5, 0.01)}; "
          f"closest fingertips-cube median {statistics.median(r[3] for r in rows):.3f} m")


if __name__ == "__main__":
    main()
