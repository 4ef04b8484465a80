"""Does a policy head for the instructed object from the first frame?

For held-out seeds of a forward task, the policy predicts its first action chunk
from the reset observation (every key it reads: cameras, ``state``, ``env_state``,
``objects``, and the instruction); the chunk's last (x, y) is compared with the
instructed object (role ``move``) and the look-alike (role ``distractor``, or on
``stack``, which has none, the ``target`` cube). A policy that localises the
instructed object puts the chunk end near it (the scripted demos are over the cube
by the 6th action); one that ignores the instruction or the image lands near the
average position and is nearer the instructed object about half the time.
Also prints the same error on the first frames of training demos.

  python benchmarks/diag_first_chunk.py outputs/img_light_h1/policy \\
      --store data/bin_place_demos_front_wrist_96.zarr
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from robot_learn.data import EpisodeStore
from robot_learn.envs import make_env
from robot_learn.evaluation.rollout import policy_cameras
from robot_learn.policies import load_policy


def _batch(policy, frame: dict, instruction: str) -> dict:
    """One observation, repeated over the policy's history, for the keys the policy reads.

    `frame` maps the policy's flat keys (``state``, ``objects``, ``images/front``) to arrays."""
    def stack(x: np.ndarray) -> torch.Tensor:
        x = np.asarray(x)
        return torch.as_tensor(x)[None, None].repeat(1, policy.obs_horizon, *([1] * x.ndim))

    batch: dict = {"instruction": [instruction]}
    for key in policy.obs_shapes:
        if key.startswith("images/"):
            batch.setdefault("images", {})[key.split("/", 1)[1]] = stack(frame[key])
        else:
            batch[key] = stack(frame[key])
    return batch


def _chunk_end(policy, obs: dict, seed: int) -> np.ndarray:
    with torch.no_grad():
        chunk = policy.predict_action_chunk(obs, generator=torch.Generator().manual_seed(seed))
    return chunk[0, -1, :2].numpy()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("policy_dir")
    ap.add_argument("--task", default="bin_place")
    ap.add_argument("--store", default="", help="demo store: also score the first frames of its episodes")
    ap.add_argument("--episodes", type=int, default=30)
    ap.add_argument("--noise-seeds", type=int, default=3, help="sampling seeds per scene")
    args = ap.parse_args()
    torch.set_num_threads(1)
    policy = load_policy(args.policy_dir).eval()
    cams, size = policy_cameras(policy)
    env = make_env(args.task, cameras=cams, **({"image_size": size} if cams else {}))
    other_role = "distractor" if "distractor" in env.unwrapped.layout.roles else "target"
    nearer, errors = 0, []
    for i in range(args.episodes):
        obs, _ = env.reset(seed=1_000_000 + i)
        move = env.unwrapped.object_pose("move")[0][:2]
        other = env.unwrapped.object_pose(other_role)[0][:2]
        frame = {**{f"images/{c}": im for c, im in obs.get("images", {}).items()}, **obs}
        batch = _batch(policy, frame, obs["instruction"])
        for s in range(args.noise_seeds):
            end = _chunk_end(policy, batch, s)
            nearer += np.linalg.norm(end - move) < np.linalg.norm(end - other)
            errors.append(float(np.linalg.norm(end - move)))
    env.close()
    n = args.episodes * args.noise_seeds
    print(f"{args.task}, held-out scenes ({args.episodes} x {args.noise_seeds} sampling seeds): chunk end nearer the "
          f"instructed object than the {other_role} {nearer}/{n} ({nearer / n:.0%}; 50% = chance); "
          f"median distance to it {100 * np.median(errors):.1f} cm")
    if args.store:
        store = EpisodeStore.open(args.store, mode="r")
        errors = []
        for i in range(min(args.episodes, store.num_episodes)):
            ep = store.episode(i)
            steps = ep["steps"]
            batch = _batch(policy, {k: steps[k][0] for k in policy.obs_shapes}, str(ep["meta"]["instruction"]))
            target = np.asarray(steps["action"][policy.action_horizon - 1][:2])
            errors.append(float(np.linalg.norm(_chunk_end(policy, batch, 0) - target)))
        print(f"training demos' first frames ({len(errors)}): median distance of the chunk end to the demo's "
              f"{policy.action_horizon}th action {100 * np.median(errors):.1f} cm")


if __name__ == "__main__":
    main()
