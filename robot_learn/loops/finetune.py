"""A round's training step: the fine-tuning modes every method shares.

- ``train_mode=continue``: fine-tune the current policy;
- ``train_mode=retrain``: a fresh policy of the same config, normalisers from the demo view;
- ``return_threshold``: success conditioning (Success conditioning, arXiv 2601.18175):
  every window is labelled with whether its episode's return reached the threshold,
  the policy reads that label as the conditioning input ``high_return`` and is
  deployed with it at +1, i.e. it imitates what led to P(R >= c);
- ``merge_alpha``: RETAIN merging of the fine-tuned weights back towards the base
  (:func:`robot_learn.policies.merging.merge_policies`).

The policy keeps its normalisers (its weights mean nothing under others). When the
round's data holds actions beyond the range the policy was first trained on (a base
trained on a narrow start spread, corrected on a wider one), a diffusion policy's
sampling range is widened to reach them (``widen_sample_range``; ``widen_range=false``
turns it off); without that every sampled chunk is clipped back inside the first demos'
range, and no fine-tuning can teach the policy to reach further.

Conditioning inputs a method's parts are labelled with (RECAP's ``advantage``) are
added to the policy with :func:`~robot_learn.policies.conditioning.with_condition_input`.

A pixel policy (one with a frozen frame encoder) trains, as in ``robot-learn train``, on
its encoder's features of every part's frames, from each store's feature cache (built
for a store the first time, rebuilt when another encoder made it); a retrained one keeps
the current policy's encoder.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from robot_learn.loops.aggregation import ConditionSampler, MixtureSampler, split_batch

HIGH_RETURN_KEY = "high_return"


def finetune(ctx: Any, cfg: Any, r: int, policy_dir: Path, parts: Mapping[str, Any], round_dir: Path
             ) -> tuple[Path, dict[str, int]]:
    """Train round ``r``'s policy from ``policy_dir`` on ``parts`` (see the module docstring);
    returns the new policy's directory and the frames available to each part."""
    from robot_learn.policies import load_policy
    from robot_learn.policies.conditioning import with_condition_input
    from robot_learn.training import Trainer, build_policy_for_view

    current = load_policy(policy_dir)
    policy = current
    if cfg.train_mode == "retrain":
        policy = build_policy_for_view(current.config, ctx.demos, frame_features(current, ctx.demos.store),
                                       name=current.name)
        if getattr(current, "frame_encoder", None) is not None:
            policy.frame_encoder.load_state_dict(current.frame_encoder.state_dict())
    if cfg.return_threshold is not None:
        parts = {n: dataclasses.replace(p, labels={**p.labels, HIGH_RETURN_KEY: return_labels(
            p.view, cfg.return_threshold)}) for n, p in parts.items()}
    for key in sorted({k for p in parts.values() for k in p.labels}):
        policy = with_condition_input(policy, key)
    sampler = training_sampler(policy, parts, int(ctx.train_config.batch_size), seed=r,
                               dropout=cfg.condition_dropout, memory=ctx.sampler_memory)
    if cfg.widen_range and hasattr(policy, "widen_sample_range") and policy.widen_sample_range(
            action_extent(policy, parts)):
        print(f"round {r}: the training actions reach beyond the policy's normalised range; sampled chunks "
              f"may now reach +-{policy.config.clip_sample_range:g}")
    lr = round_lr(cfg, current, float(ctx.train_config.lr))
    print(f"round {r}: {cfg.train_mode} training, {cfg.train_steps} steps at lr {lr:g}")
    train_cfg = dataclasses.replace(ctx.train_config, out_dir=str(round_dir / "train"), steps=cfg.train_steps,
                                    seed=ctx.train_config.seed + r, lr=lr)
    new_dir = Path(Trainer(policy, sampler, train_cfg).fit()["final_policy_dir"])
    if cfg.merge_alpha is not None:
        new_dir = merge_into(ctx.base_policy_dir or policy_dir, new_dir, cfg.merge_alpha, round_dir / "merged")
    return new_dir, {name: int(len(part)) for name, part in sampler.samplers.items()}


def round_lr(cfg: Any, policy: Any, train_lr: float) -> float:
    """The round's learning rate: ``cfg.train_lr`` when set; else a continued policy with a
    frame encoder fine-tunes at its ``frame_pretraining.finetune_lr`` (1e-4 unless set), and
    anything else at ``train_lr``. The evidence is one diffusion pixel policy (front 64 px, frozen
    encoder, no end-to-end phase): at train.lr's 1e-3 a round with no new data took it from 39% to
    24% over 200 paired seeds, at 1e-4 to 36% (docs/benchmarks.md). The pixel VLA's rounds have
    not been measured at either rate; the lower one is the cautious choice for a trained policy."""
    from robot_learn.policies.frame_encoder import FramePretrainConfig

    if cfg.train_lr is not None:
        return float(cfg.train_lr)
    if cfg.train_mode == "continue" and getattr(policy, "frame_encoder", None) is not None:
        return float(FramePretrainConfig(**policy.config.frame_pretraining).finetune_lr)
    return train_lr


def training_sampler(policy: Any, parts: Mapping[str, Any], batch_size: int, seed: int, dropout: float,
                     memory: Mapping[str, Any] | None = None) -> Any:
    """Batches with each part's share (by weight) of windows the policy trains on,
    conditioning inputs filled from the parts' labels (0 where a part has none). ``memory``:
    ``WindowSampler``'s ``max_cache_bytes`` and ``windows_per_frame`` for each part's sampler
    (the cap is per part, as the sampler's default was); absent ones keep the defaults."""
    from robot_learn.data import WindowSampler

    shares = split_batch(batch_size, {n: p.weight for n, p in parts.items()})
    samplers = {}
    for i, (name, part) in enumerate(parts.items()):
        if name not in shares:
            continue  # weight 0
        windows = WindowSampler(part.view, obs_keys=policy.training_obs_keys, obs_horizon=policy.obs_horizon,
                                action_horizon=policy.action_horizon, batch_size=shares[name],
                                seed=1000 * seed + i, derived=frame_features(policy, part.view.store),
                                anchor_every=part.anchor_every, **(memory or {}))
        samplers[name] = (ConditionSampler(windows, tuple(policy.conditions), part.labels, dropout, seed=1000 * seed + i)
                          if policy.conditions else windows)
    return MixtureSampler(samplers)


def frame_features(policy: Any, store: Any) -> dict[str, np.ndarray]:
    """``{"features": per-frame array}`` of ``store`` by ``policy``'s frozen frame encoder,
    from the store's feature cache; ``{}`` for a policy without one."""
    from robot_learn.policies.frame_encoder import FEATURES_KEY
    from robot_learn.training.frame_feature_cache import cached_frame_features

    encoder = getattr(policy, "frame_encoder", None)
    if encoder is None:
        return {}
    return {FEATURES_KEY: cached_frame_features(store, encoder)}


def action_extent(policy: Any, parts: Mapping[str, Any]) -> float:
    """The largest |action| of the parts' episodes under ``policy``'s action normaliser
    (1.0: within the range it was first trained on)."""
    import torch

    extent = 1.0
    for part in parts.values():
        if part.weight > 0 and part.view.num_episodes:
            actions = torch.as_tensor(np.asarray(part.view.read("action"), dtype=np.float32))
            extent = max(extent, float(policy.action_normalizer.normalize(actions).abs().max()))
    return extent


def return_labels(view: Any, threshold: float) -> dict[int, np.ndarray]:
    """Per step of each episode of ``view``: did the episode's return (sum of rewards) reach ``threshold``?"""
    store, out = view.store, {}
    for e in view.episodes:
        start, end = store.episode_range(int(e))
        out[int(e)] = np.full(end - start, float(store.read("reward", start, end).sum()) >= threshold)
    return out


def merge_into(base_dir: Path, finetuned_dir: Path, alpha: Any, out_dir: Path) -> Path:
    """Save ``merge_policies(base, finetuned, alpha)`` to ``out_dir``; the base is first
    given the fine-tuned policy's conditioning inputs (zero-initialised: unchanged)."""
    from robot_learn.policies import load_policy
    from robot_learn.policies.conditioning import with_condition_input
    from robot_learn.policies.merging import merge_policies

    base, finetuned = load_policy(base_dir), load_policy(finetuned_dir)
    for key, deployed in finetuned.conditions.items():
        if key not in base.conditions and hasattr(base.config, "conditions"):
            base = with_condition_input(base, key, deployed)
    merge_policies(base, finetuned, alpha).save(out_dir)
    return out_dir
