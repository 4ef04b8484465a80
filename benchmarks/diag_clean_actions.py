"""Copy a store's successful episodes with their actions cleaned, to test whether a policy's
own successes hurt a round because of the noise in their actions (``bench_round_recipe.py --extra``).

- ``--smooth W``: a centred moving average of width W over the ``--pose-dims`` (edges padded);
- ``--binarize DIM``: that action dimension thresholded at 0.5 (an expert's gripper is 0 or 1).

``policy_action`` is set to the cleaned action too (the policy ran them unchanged).

  .venv/bin/python benchmarks/diag_clean_actions.py outputs/bench_wm_improve_fw_s64/sim/collected.zarr \\
      outputs/e9/bin.zarr --binarize 4
"""

from __future__ import annotations

import argparse

import numpy as np

from robot_learn.data import EpisodeStore


def clean(actions: np.ndarray, smooth: int, pose_dims: list[int], binarize: list[int]) -> np.ndarray:
    out = np.array(actions, dtype=np.float32, copy=True)
    if smooth > 1:
        kernel = np.ones(smooth) / smooth
        for d in pose_dims:
            out[:, d] = np.convolve(np.pad(out[:, d], smooth // 2, mode="edge"), kernel, mode="valid")
    for d in binarize:
        out[:, d] = (out[:, d] > 0.5).astype(np.float32)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("src")
    parser.add_argument("out")
    parser.add_argument("--smooth", type=int, default=1, help="moving-average width (odd; 1: none)")
    parser.add_argument("--pose-dims", type=int, nargs="+", default=[0, 1, 2, 3])
    parser.add_argument("--binarize", type=int, nargs="*", default=[])
    args = parser.parse_args()
    if args.smooth < 1 or args.smooth % 2 == 0:
        raise SystemExit(f"--smooth must be an odd width >= 1, got {args.smooth}")
    src, out = EpisodeStore.open(args.src), EpisodeStore.create(args.out)
    for e in src.view(success=True).episodes:
        episode = src.episode(int(e))
        steps = {k: np.asarray(v) for k, v in episode["steps"].items()}
        steps["action"] = clean(steps["action"], args.smooth, args.pose_dims, args.binarize)
        steps["policy_action"] = steps["action"].copy()
        out.append_episode(steps, episode["meta"])
    print(f"{out.num_episodes} successes of {args.src} -> {args.out}")


if __name__ == "__main__":
    main()
