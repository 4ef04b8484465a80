"""Re-run only a pixel run's end-to-end fine-tuning phase, with other settings.

Starts from the run's cached-phase policy (``RUN/policy``, the EMA weights before any
fine-tuning) and runs :func:`robot_learn.training.encoder_finetune.finetune_frame_encoder`
with the run's training settings, except the batch, steps and learning rate given here,
into ``OUT/encoder_finetune``. So several fine-tuning settings compare on one cached
phase, paired, without training it again. Evaluate with ``robot-learn eval
checkpoint=OUT/encoder_finetune``.

  python benchmarks/refinetune.py outputs/train/px_pb32 outputs/train/ftv_b32 --batch 32 --steps 1000
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import types
from pathlib import Path

import torch

from robot_learn.data import EpisodeStore
from robot_learn.policies import load_policy
from robot_learn.training.config import TrainConfig
from robot_learn.training.encoder_finetune import finetune_frame_encoder
from robot_learn.training.frame_features import cached_features


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", type=Path, help="a robot-learn train run of a pixel preset (its report.json, policy/)")
    parser.add_argument("out", type=Path)
    parser.add_argument("--batch", type=int, required=True, help="windows per fine-tuning step")
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--lr", type=float, default=None, help="default: the run's finetune_lr")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    report_path = args.run / "report.json"
    if not report_path.is_file():
        sys.exit(f"{report_path} not found: give the directory of a finished robot-learn train run")
    config = json.loads(report_path.read_text())["config"]
    torch.set_num_threads(args.threads)
    policy = load_policy(args.run / "policy")
    if policy.frame_encoder is None:
        sys.exit(f"{args.run / 'policy'} has no frame encoder: only pixel presets have a fine-tuning phase")
    # A loaded policy is built as the cached phase built it: what that phase trained takes
    # gradients (the frozen frame encoder, and any frozen text model, do not).
    settings = {**policy.config.frame_pretraining, "finetune_steps": args.steps, "finetune_batch_size": args.batch}
    if args.lr is not None:
        settings["finetune_lr"] = args.lr
    policy.config = dataclasses.replace(policy.config, frame_pretraining=settings)
    demos = EpisodeStore.open(config["data"]["path"], mode="r").view(task=config["task"]["name"], success=True)
    derived = {"features": cached_features(demos, policy.frame_encoder)}
    train = {k: v for k, v in config["train"].items() if k != "_target_"}
    train_cfg = TrainConfig(**{**train, "out_dir": str(args.out)})
    cached_phase = types.SimpleNamespace(policy=policy, ema_policy=policy)
    _, fit = finetune_frame_encoder(cached_phase, demos, derived, train_cfg, int(config["data"]["sampler_seed"]) + 1)
    print(f"fine-tuning: {args.steps} steps at batch {args.batch} in {fit['time']:.0f} s, loss {fit['loss']:.4f}; "
          f"policy {fit['final_policy_dir']}")


if __name__ == "__main__":
    main()
