"""An improvement round's fine-tuning on the base demos alone: does the recipe itself move success?

Fine-tunes a saved policy (``--base``, e.g. a checkpoint's ``ema``) on the successful demos of
``--store`` only, as a ``train_mode=continue`` round of ``robot-learn improve`` trains it
(a fresh optimiser, ``--lr`` after ``--warmup`` steps, cosine to 0 over ``--steps``, a new EMA),
with no new episodes, or with ``--extra``: the successes of another store (a round's
``collected.zarr``) join the demos, each part weighted by its frames as ``loop=autonomous``
curates them, sampled by the round's own mixture sampler. ``--max-length`` keeps only the
extra successes of at most that many steps, ``--subsample K`` K of them at random (the
size-matched control of a length filter); ``--extra-anchor-every K`` draws their windows only
at steps 0, K, 2K, ... (where a policy executing K-step chunks chose them; the batch share stays
by frames). ``--ema continue`` starts the EMA's decay where a ``--base-steps`` run
left it instead of warming it up again. The policy lands in ``OUT/policy``; evaluate it with
``robot-learn eval checkpoint=OUT/policy`` on the seeds the base was evaluated on.

  MUJOCO_GL=egl .venv/bin/python benchmarks/bench_round_recipe.py outputs/train/px_front64b/checkpoints/step_0004000/ema \\
      data/bin_place_demos_front_64.zarr outputs/ft_recipe/lr1e3_fresh --lr 1e-3
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch

from robot_learn.data import EpisodeStore, EpisodeView, WindowSampler
from robot_learn.loops.finetune import training_sampler
from robot_learn.loops.round import Part
from robot_learn.policies import load_policy
from robot_learn.training import Trainer
from robot_learn.training.config import TrainConfig
from robot_learn.training.frame_features import cached_features


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("base", type=Path, help="a saved policy directory")
    parser.add_argument("store", type=Path, help="the demo store it was trained on")
    parser.add_argument("out", type=Path)
    parser.add_argument("--task", default="bin_place")
    parser.add_argument("--lr", type=float, default=1e-3, help="the improve default (train=default)")
    parser.add_argument("--steps", type=int, default=500, help="loop.train_steps' default")
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--ema", choices=("fresh", "continue"), default="fresh")
    parser.add_argument("--base-steps", type=int, default=4000, help="the base run's steps (--ema continue)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=7, help="the sampler's seed")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--extra", type=Path, help="a store whose successful episodes join the demos")
    parser.add_argument("--max-length", type=int, help="only --extra successes of at most this many steps")
    parser.add_argument("--subsample", type=int, help="only this many --extra successes, drawn at random")
    parser.add_argument("--subsample-seed", type=int, default=0)
    parser.add_argument("--extra-anchor-every", type=int, default=1,
                        help="draw --extra windows only at every K-th step (K: the policy's executed chunk)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    policy = load_policy(args.base).train()
    demos = EpisodeStore.open(args.store, mode="r").view(task=args.task, success=True)
    if args.extra is None:
        derived = {} if policy.frame_encoder is None else {"features": cached_features(demos, policy.frame_encoder)}
        sampler = WindowSampler(demos, obs_keys=policy.training_obs_keys, obs_horizon=policy.obs_horizon,
                                action_horizon=policy.action_horizon, batch_size=args.batch_size, seed=args.seed,
                                derived=derived)
    else:
        wins = extra_successes(args)
        print(f"--extra: {wins.num_episodes} successes, {wins.num_frames} frames, beside {demos.num_frames} demo frames")
        parts = {"base": Part(demos, demos.num_frames),
                 "successes": Part(wins, wins.num_frames, anchor_every=args.extra_anchor_every)}
        sampler = training_sampler(policy, parts, args.batch_size, seed=args.seed, dropout=0.0)
    cfg = TrainConfig(steps=args.steps, batch_size=args.batch_size, lr=args.lr, warmup_steps=args.warmup, ckpt_every=0,
                      log_every=50, num_threads=args.threads, progress_bar=True, out_dir=str(args.out), seed=1)
    trainer = Trainer(policy, sampler, cfg)
    if args.ema == "continue" and trainer.ema is not None:
        trainer.ema.optimization_step = args.base_steps  # the decay the base's EMA had reached
    fit = trainer.fit()
    print(f"{args.steps} steps at lr {args.lr:g}, EMA {args.ema}: loss {fit['loss']:.4f}; policy {fit['final_policy_dir']}")


def extra_successes(args: argparse.Namespace) -> EpisodeView:
    """The successful episodes of ``--extra`` that pass ``--max-length`` and ``--subsample``."""
    store = EpisodeStore.open(args.extra, mode="r")
    wins = store.view(task=args.task, success=True)
    keep = wins.episodes if args.max_length is None else wins.episodes[wins.lengths <= args.max_length]
    if args.subsample is not None:
        if not 0 < args.subsample <= len(keep):
            raise SystemExit(f"--subsample {args.subsample}: {args.extra} has {len(keep)} successes to draw from")
        keep = np.random.default_rng(args.subsample_seed).choice(keep, args.subsample, replace=False)
    if not len(keep):
        raise SystemExit(f"--extra {args.extra}: no successful {args.task} episode passes the filters")
    return EpisodeView(store, keep)


if __name__ == "__main__":
    main()
