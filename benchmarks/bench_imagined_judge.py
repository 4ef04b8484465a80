"""Judging imagined rollouts: do judges trained on imagined frames with real labels call fewer
failures successes?

Real rollouts (with failures, labelled by MuJoCo: e.g. a GRPO run's ``rollouts.zarr`` in the
simulator) are split by start seed: the last ``--held-out`` share of the starts is held out.
Every held-out rollout is replayed open loop in the world model
(:func:`~robot_learn.world_models.replay_labels.imagined_labels`); a judge calls a replay a
success when any imagined frame is one (as ``WorldModelEnv`` ends an episode), and the table
compares that with MuJoCo's label; the last column scores the same judges on the held-out
rollouts' real frames, which says whether what fails is the judge or the imagination. Judges:

- ``nearest``: the nearest stored frame of the world model's training store (the loops' default);
- ``sharp``: the run's learned success model (real frames of the training store);
- ``sharp+rollouts``: the same recipe on real frames of the training store and of the
  training rollouts (the failures, without imagination: the control);
- ``imagined``: real frames of the training store and of the training rollouts, plus the
  training rollouts replayed in the world model with their real labels.

    MUJOCO_GL=egl .venv/bin/python benchmarks/bench_imagined_judge.py --world-model outputs/wm/RUN \\
        --rollouts outputs/bench_wm_grpo/grpo_sim/round_01/rollouts.zarr --out outputs/bench_imagined_judge
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch


def split_by_start(store, held_out: float) -> tuple[list[int], list[int]]:
    seeds = np.asarray(store.meta["seed"], dtype=np.int64)
    unique = np.unique(seeds)
    cut = unique[int(round(len(unique) * (1 - held_out))):]
    held = np.isin(seeds, cut)
    return np.flatnonzero(~held).tolist(), np.flatnonzero(held).tolist()


def judged(scorer, labels, episodes: int) -> np.ndarray:
    """Per replayed episode: did the judge call any imagined frame a success?"""
    calls = np.zeros(episodes, dtype=bool)
    for i in range(len(labels.success)):
        if scorer.score(labels.frames[i], labels.states[i], labels.instructions[i])[0]:
            calls[labels.episode[i]] = True
    return calls


def episode_scores(judge, labels, episodes: int) -> np.ndarray | None:
    """Per replayed episode, the learned judge's highest success probability over its frames
    (None for a judge without probabilities)."""
    if not isinstance(judge, torch.nn.Module):
        return None
    best = np.zeros(episodes)
    with torch.inference_mode():
        for lo in range(0, len(labels.success), 256):
            sl = slice(lo, lo + 256)
            logits, _ = judge(torch.as_tensor(labels.frames[sl]), torch.as_tensor(labels.states[sl]),
                              labels.instructions[sl])
            np.maximum.at(best, labels.episode[sl], torch.sigmoid(logits).numpy())
    return best


def auc(scores: np.ndarray, truth: np.ndarray) -> float:
    """Probability that a random success scores above a random failure (ties count half)."""
    pos, neg = scores[truth], scores[~truth]
    if not len(pos) or not len(neg):
        return float("nan")
    return float(((pos[:, None] > neg[None]).sum() + 0.5 * (pos[:, None] == neg[None]).sum()) / (len(pos) * len(neg)))


def main() -> None:
    from robot_learn.data import EpisodeStore, EpisodeView
    from robot_learn.evaluation.metrics import wilson_interval
    from robot_learn.world_models import load_world_model
    from robot_learn.world_models.checkpoint import run_settings, training_store
    from robot_learn.world_models.replay_labels import imagined_labels
    from robot_learn.world_models.rollout import make_scorer
    from robot_learn.world_models.success_model import load_success_model, success_labels, train_success_model
    from robot_learn.world_models.training import split_store

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--world-model", required=True, help="a `wm train` run dir")
    parser.add_argument("--rollouts", required=True, help="a store of real rollouts with MuJoCo's success labels")
    parser.add_argument("--held-out", type=float, default=0.3, help="share of the start seeds held out")
    parser.add_argument("--steps", type=int, default=1500, help="training steps of each new judge")
    parser.add_argument("--success-frames", type=int, default=1,
                        help="the new judges learn the last N frames of a successful episode as successes")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", default="outputs/bench_imagined_judge")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    model = load_world_model(args.world_model)
    camera = model.config.camera
    wm_store = EpisodeStore.open(training_store(args.world_model), mode="r")
    held = int((run_settings(args.world_model).get("data") or {}).get("held_out", 0))
    wm_train = split_store(wm_store, held).train  # the frames the run's own judge was trained on
    rollouts = EpisodeStore.open(args.rollouts, mode="r")
    train_eps, test_eps = split_by_start(rollouts, args.held_out)
    train_view, test_view = EpisodeView(rollouts, train_eps), EpisodeView(rollouts, test_eps)
    truth = np.asarray(rollouts.meta["success"], dtype=bool)[test_eps]
    print(f"rollouts: {rollouts.num_episodes} ({int(np.asarray(rollouts.meta['success']).sum())} successes); "
          f"training {len(train_eps)}, held out {len(test_eps)} ({int(truth.sum())} successes)", flush=True)

    start = time.perf_counter()
    test_replays = imagined_labels(model, test_view)
    train_replays = imagined_labels(model, train_view, last=args.success_frames)
    print(f"replayed in the world model: {len(train_replays.success) + len(test_replays.success)} imagined frames "
          f"in {time.perf_counter() - start:.0f} s", flush=True)
    train_real = success_labels(train_view, camera, last=args.success_frames)

    judges = {"nearest": make_scorer("nearest", EpisodeView(wm_store, range(wm_store.num_episodes)), model),
              "sharp": load_success_model(Path(args.world_model) / "success_model")}
    suffix = "" if args.success_frames == 1 else f" (last {args.success_frames})"
    for name, extra in ((f"sharp+rollouts{suffix}", train_real), (f"imagined{suffix}", train_real.joined(train_replays))):
        directory = out / name.replace(" ", "_").replace("(", "").replace(")", "")
        if (directory / "model.safetensors").exists():
            judges[name] = load_success_model(directory)
            continue
        start = time.perf_counter()
        judge = train_success_model(wm_train, camera, steps=args.steps, extra=extra, success_frames=args.success_frames)
        judge.save(directory)
        judges[name] = judge
        print(f"trained judge {name} in {time.perf_counter() - start:.0f} s ({len(extra.success)} extra frames)",
              flush=True)

    print(f"\n{len(test_eps)} held-out rollouts replayed open loop in {args.world_model} "
          f"({int(truth.sum())} MuJoCo successes)")
    real_test = success_labels(test_view, camera)
    print("| judge | replays judged right [95% CI] | true successes judged success | failures judged success | "
          "AUC of the highest success probability | on the real frames: judged right, AUC |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    n_win, n_fail = int(truth.sum()), int((~truth).sum())
    for name, judge in judges.items():
        calls = judged(judge, test_replays, len(test_eps))
        right = int((calls == truth).sum())
        low, high = wilson_interval(right, len(truth))
        best = episode_scores(judge, test_replays, len(test_eps))
        area = "-" if best is None else f"{auc(best, truth):.2f}"
        real_calls = judged(judge, real_test, len(test_eps))
        real_best = episode_scores(judge, real_test, len(test_eps))
        real = f"{int((real_calls == truth).sum())}/{len(truth)}, " + ("-" if real_best is None else
                                                                        f"{auc(real_best, truth):.2f}")
        print(f"| {name} | {right}/{len(truth)} = {right / len(truth):.0%} [{low:.0%}, {high:.0%}] | "
              f"{int((calls & truth).sum())}/{n_win} | {int((calls & ~truth).sum())}/{n_fail} | {area} | {real} |",
              flush=True)


if __name__ == "__main__":
    main()
