"""Train the tiny policy on an existing store; run as a subprocess (plain or under torchrun).

    python train_tiny.py STORE OUT_DIR --steps N --ckpt-every K [--same-seed-on-all-ranks]

Writes ``OUT_DIR/weights_rank<R>.safetensors`` with the trained policy (``policy.*``)
and EMA (``ema.*``) weights of each rank at the end.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
from training_fixtures import make_sampler, make_tiny_policy  # noqa: E402

from robot_learn.data import EpisodeStore  # noqa: E402
from robot_learn.training import Trainer, TrainConfig, rank_seed  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("store")
    parser.add_argument("out_dir")
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--ckpt-every", type=int, default=0)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--same-seed-on-all-ranks", action="store_true")
    args = parser.parse_args()

    store = EpisodeStore.open(args.store, mode="r")
    policy = make_tiny_policy(store, seed=0)
    sampler_seed = 0 if args.same_seed_on_all_ranks else rank_seed(0)
    cfg = TrainConfig(
        steps=args.steps, batch_size=args.batch_size, lr=args.lr, warmup_steps=5, ckpt_every=args.ckpt_every,
        keep_last_k=2, log_every=5, out_dir=args.out_dir, seed=0, device="cpu", num_threads=1, progress_bar=False,
    )
    trainer = Trainer(policy, make_sampler(store, args.batch_size, sampler_seed), cfg)
    trainer.fit()
    weights = {f"policy.{k}": v.detach().contiguous() for k, v in trainer.policy.state_dict().items()}
    weights |= {f"ema.{k}": v.detach().contiguous() for k, v in trainer.ema_policy.state_dict().items()}
    save_file(weights, str(Path(args.out_dir) / f"weights_rank{os.environ.get('RANK', '0')}.safetensors"))


if __name__ == "__main__":
    torch.set_num_threads(1)
    main()
