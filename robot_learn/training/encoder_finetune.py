"""End-to-end fine-tuning of a pixel policy's frame encoder (``frame_pretraining.finetune_steps``).

The policy first trains at state-policy speed on the encoder's cached features, with the
encoder frozen. This second phase starts from that run's EMA weights, unfreezes the
encoder and trains everything on raw frames for a few more steps at a low learning rate,
so the policy's own loss can sharpen what the privileged pretraining left coarse. It is
a plain :class:`~robot_learn.training.Trainer` run in ``<run dir>/encoder_finetune``,
with its own checkpoints, so it resumes like any training.
"""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

from robot_learn.data import WindowSampler
from robot_learn.policies.frame_encoder import FramePretrainConfig
from robot_learn.training.config import TrainConfig
from robot_learn.training.precision import autocast_dtype
from robot_learn.training.trainer import Trainer

FINETUNE_DIRNAME = "encoder_finetune"


def finetune_steps(policy: Any) -> int:
    """The policy's fine-tuning steps (0 for policies without a frame encoder)."""
    settings = getattr(policy.config, "frame_pretraining", None)
    if not getattr(policy.config, "frame_encoder", None) or not settings:
        return 0
    return FramePretrainConfig(**settings).finetune_steps


def finetune_frame_encoder(trainer: Trainer, demos: Any, derived: dict, train_cfg: TrainConfig,
                           sampler_seed: int, memory: dict[str, Any] | None = None) -> tuple[Trainer, dict[str, Any]]:
    """A trainer, and what its ``fit`` returned, for the fine-tuning phase after ``trainer`` (whose
    ``ema_policy`` it starts from): the parameters ``trainer`` trained plus those the encoder's
    ``encode`` reads take gradients, batches carry the encoder's cameras, the learning rate is
    ``finetune_lr`` for all of them and the batch ``finetune_batch_size`` (0: ``train_cfg``'s), in
    bf16 autocast on the CPU with ``cpu_bf16`` where the CPU runs bf16 (a warning naming
    ``cpu_bf16`` elsewhere), or with ``train_cfg.cpu_amp``;
    ``memory``: the sampler's ``max_cache_bytes`` / ``windows_per_frame`` (None: its defaults)."""
    settings = FramePretrainConfig(**trainer.ema_policy.config.frame_pretraining)
    # cpu_bf16 covers this phase too. train.cpu_amp is set only where bf16 will run: the Trainer's
    # own fallback warning would name train.cpu_amp, a setting the user never set.
    bf16 = autocast_dtype(False, settings.cpu_bf16, trainer.device, "frame_pretraining.cpu_bf16") is not None
    trained = {name for name, p in trainer.policy.named_parameters() if p.requires_grad}
    policy = copy.deepcopy(trainer.ema_policy)
    # Only what the policy's loss reaches: DDP refuses parameters that take no gradient.
    trained |= {f"frame_encoder.{name}" for name in policy.frame_encoder.encoding_parameter_names()}
    for name, parameter in policy.named_parameters():
        parameter.requires_grad_(name in trained)
    cfg = dataclasses.replace(
        train_cfg, steps=settings.finetune_steps, lr=settings.finetune_lr, eval_every=0,
        batch_size=settings.finetune_batch_size or train_cfg.batch_size,
        cpu_amp=train_cfg.cpu_amp or bf16,
        warmup_steps=min(train_cfg.warmup_steps, max(1, settings.finetune_steps // 10)),
        ckpt_every=min(train_cfg.ckpt_every, settings.finetune_steps),
        out_dir=str(Path(train_cfg.out_dir) / FINETUNE_DIRNAME))
    sampler = WindowSampler(demos, obs_keys=policy.training_obs_keys, obs_horizon=policy.obs_horizon,
                            action_horizon=policy.action_horizon, batch_size=cfg.batch_size,
                            seed=sampler_seed, derived=derived, **(memory or {}))
    finetuner = Trainer(policy, sampler, cfg)
    return finetuner, finetuner.fit()
