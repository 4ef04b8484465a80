"""Checks of an ALOHA demo store's data path, cheapest first, and optionally of a policy trained on it.

    MUJOCO_GL=egl OMP_NUM_THREADS=1 .venv-bench/bin/python benchmarks/diag_aloha_demos.py STORE [--replay 5] [--policy DIR]

1. Joint targets: each action dim's range, the largest change in one step, and per arm
   how many episodes turn forearm roll or wrist rotate past pi/2 (another IK branch) and
   which way: demos of like scenes should agree.
2. Replay: the first ``--replay`` episodes' actions, open loop in a fresh env from their
   seeds: success, and the largest difference from the stored ``state``/``env_state``
   (row t must be the observation action t was taken at).
3. With ``--policy``: on stored observations, the mean error of its predicted chunk
   against the demo's actions shifted by -2..2 steps (smallest at 0 when the windows and
   ``select_action`` agree), and how rough its chunks are next to the demos' (mean
   |second difference| per action dim).
"""

from __future__ import annotations

import argparse

import numpy as np

ROLLS = {"left": (3, 5), "right": (10, 12)}  # forearm roll, wrist rotate in the 14-dim action


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("store")
    p.add_argument("--replay", type=int, default=5)
    p.add_argument("--policy", default=None)
    args = p.parse_args()
    np.set_printoptions(precision=3, suppress=True, linewidth=160)

    from robot_learn.data import EpisodeStore

    store = EpisodeStore.open(args.store)
    episodes = [store.episode_range(i) for i in range(store.num_episodes)]
    actions = [store.read("action", a, b) for a, b in episodes]
    task = str(store.meta["task"][0])
    every = np.concatenate(actions)
    print(f"{store.num_episodes} episodes of {task}\naction min {every.min(0)}\naction max {every.max(0)}")
    print(f"largest change in one step per dim {np.max([np.abs(np.diff(a, axis=0)).max(0) for a in actions], 0)}")
    for arm, dims in ROLLS.items():
        turn = [a[:, dims][np.abs(a[:, dims]).argmax(0), [0, 1]] for a in actions]  # signed extreme per roll
        past = [t[0] for t in turn if np.abs(t).max() > np.pi / 2]
        print(f"{arm} arm: {len(past)} of {len(actions)} episodes turn a roll past pi/2 "
              f"({sum(x > 0 for x in past)} with forearm roll +, {sum(x < 0 for x in past)} -)")

    from robot_learn.envs import make_env

    env = make_env(task, cameras=())
    for i, (a, b) in enumerate(episodes[:args.replay]):
        state, env_state = store.read("state", a, b), store.read("env_state", a, b)
        obs, _ = env.reset(seed=int(store.meta["seed"][i]))
        worst = 0.0
        for t, action in enumerate(actions[i]):
            worst = max(worst, np.abs(obs["state"] - state[t]).max(), np.abs(obs["env_state"] - env_state[t]).max())
            obs, _, terminated, truncated, info = env.step(action)
        print(f"replay episode {i} (seed {int(store.meta['seed'][i])}): success {info['success']}, "
              f"largest difference from the stored observations {worst:.2e}")
    env.close()
    if args.policy:
        check_policy(args.policy, store, episodes, actions)


def check_policy(policy_dir: str, store, episodes, actions) -> None:
    import torch

    from robot_learn.policies.checkpoint import load_policy

    torch.set_num_threads(1)
    policy = load_policy(policy_dir).eval()
    generator = torch.Generator().manual_seed(0)
    start, run = policy.obs_horizon - 1, policy.execute_horizon
    shifts = range(-2, 3)
    errors, rough, demo_rough = {k: [] for k in shifts}, [], []
    for (a, b), act in list(zip(episodes, actions))[:3]:
        obs_all = {k: store.read(k, a, b) for k in policy.obs_shapes}
        for t in range(policy.obs_horizon + 1, len(act) - run - 3, 4):
            window = {k: torch.from_numpy(v[t - policy.obs_horizon + 1:t + 1])[None] for k, v in obs_all.items()}
            with torch.inference_mode():
                chunk = policy.predict_action_chunk(window, generator=generator)[0].numpy()
            for k in shifts:
                errors[k].append(np.abs(chunk[start:start + run] - act[t + k:t + k + run]).mean())
            rough.append(np.abs(np.diff(chunk, 2, axis=0)).mean(0))
            demo_rough.append(np.abs(np.diff(act[t - start:t - start + len(chunk)], 2, axis=0)).mean(0))
    print("policy chunk vs demo actions shifted by k steps, mean abs error: "
          + ", ".join(f"{k:+d}: {np.mean(v):.4f}" for k, v in errors.items()))
    print(f"mean |second difference| per dim, policy chunks {np.mean(rough, 0)}\n"
          f"                                  demo actions {np.mean(demo_rough, 0)}")


if __name__ == "__main__":
    main()
