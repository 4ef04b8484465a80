"""The learned success model against the nearest-frame scorer, on held-out episodes.

Both scorers label frames for ``WorldModelEnv``. Here they label real frames of
held-out noisy expert episodes (some fail), so the truth is known: per-frame progress
error, and per episode "judged a success" (any frame scored a success, as the env's
termination reads it) against the episode's true outcome. Both are fit on the same
training episodes; one run, side by side.

    python benchmarks/bench_success_model.py --task bin_place --train-episodes 150 --test-episodes 60
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch


def judge(scorer, data) -> tuple[np.ndarray, np.ndarray, float]:
    """Per-frame (success, progress) of ``scorer`` over ``data``; seconds per frame."""
    start = time.perf_counter()
    out = [scorer.score(data.frames[i], data.states[i], data.instructions[i]) for i in range(len(data.frames))]
    seconds = (time.perf_counter() - start) / len(out)
    return np.asarray([s for s, _ in out]), np.asarray([p for _, p in out], np.float32), seconds


def main() -> int:
    from robot_learn.data import EpisodeStore
    from robot_learn.evaluation.metrics import wilson_interval
    from robot_learn.envs.demos import collect_demos
    from robot_learn.world_models.scorer import NearestFrameScorer
    from robot_learn.world_models.success_model import success_labels, train_success_model

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="bin_place")
    parser.add_argument("--camera", default="front")
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--train-episodes", type=int, default=150)
    parser.add_argument("--test-episodes", type=int, default=60)
    parser.add_argument("--noise", type=float, default=2.0, help="expert noise; at 2.0 about half the episodes fail")
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default="outputs/bench_success_model")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    stores = {}
    for split, n, seed in (("train", args.train_episodes, 0), ("test", args.test_episodes, 500_000)):
        stores[split] = out / f"{args.task}_{split}_{args.camera}_{args.size}.zarr"
        if not stores[split].exists():
            start = time.perf_counter()
            collect_demos(args.task, n, stores[split], noise=args.noise, seed=seed, cameras=(args.camera,),
                          image_size=args.size, keep_failures=True, progress_bar=False)
            print(f"collected {n} {split} episodes in {time.perf_counter() - start:.0f} s")
    with EpisodeStore.open(stores["train"], mode="r") as train_store, \
            EpisodeStore.open(stores["test"], mode="r") as test_store:
        train_view = train_store.view()
        test_view = test_store.view()
        start = time.perf_counter()
        learned = train_success_model(train_view, args.camera, steps=args.steps, progress_bar=True)
        learned_s = time.perf_counter() - start
        learned.save(out / "success_model")
        start = time.perf_counter()
        nearest = NearestFrameScorer(train_view, args.camera)
        nearest_s = time.perf_counter() - start
        test = success_labels(test_view, args.camera)
        truth = np.asarray(test_store.meta["success"], dtype=bool)
        train_won = int(np.asarray(train_store.meta["success"], dtype=bool).sum())
    print(f"\n{args.task}, {args.camera} {args.size} px, expert noise {args.noise}: train {len(train_view.episodes)} "
          f"episodes ({train_won} successful), test {len(truth)} held-out episodes ({int(truth.sum())} successful, "
          f"{len(test.frames)} frames)\n")
    print("| scorer | fit (s) | progress MAE per frame | episodes judged right [95% CI] | "
          "true successes judged success | failures judged failure | ms per frame |")
    print("| --- | ---: | ---: | --- | ---: | ---: | ---: |")
    for name, scorer, fit_s in (("nearest frame", nearest, nearest_s), ("learned", learned, learned_s)):
        success, progress, seconds = judge(scorer, test)
        judged = np.asarray([success[test.episode == e].any() for e in range(len(truth))])
        right = int((judged == truth).sum())
        lo, hi = wilson_interval(right, len(truth))
        print(f"| {name} | {fit_s:.0f} | {np.abs(progress - test.progress).mean():.3f} | "
              f"{right}/{len(truth)} = {right / len(truth):.0%} [{lo:.0%}, {hi:.0%}] | "
              f"{int((judged & truth).sum())}/{int(truth.sum())} | {int((~judged & ~truth).sum())}/{int((~truth).sum())} "
              f"| {1000 * seconds:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
