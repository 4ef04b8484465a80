"""Building ReGuide's phase guide from an episode store: the latent dynamics model (trained
on demos plus base rollouts, successes and failures) and the phase prototypes (demos only).

A guide directory holds ``dynamics/`` (:class:`LatentDynamics`), ``prototypes/``
(:class:`PhasePrototypes`) and ``guide.json`` (how it was built and the dynamics model's
held-out error against predicting no change). :func:`load_phase_guide` turns it into a
:class:`PhaseGuidedSampler` for a policy, refusing a guide of another task or encoder.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import torch

from robot_learn.policies.diffusion.phase_guidance import PCGSettings, PhaseGuidedSampler
from robot_learn.policies.frame_encoder import FEATURES_KEY
from robot_learn.policies.latent_dynamics import STATE_ENCODER, LatentDynamics, LatentDynamicsConfig
from robot_learn.policies.phase_prototypes import (PhasePrototypes, PhaseSettings, build_phase_prototypes,
                                                   check_enough_demos)
from robot_learn.training.frame_feature_cache import cached_frame_features

STATE_FEATURE_KEYS = ("state", "env_state")


def episode_features(view: Any, keys: Sequence[str], frame_features: np.ndarray | None = None) -> list[np.ndarray]:
    """Per-episode feature arrays ``[T_e, D]`` of ``view``: its ``keys`` concatenated per frame,
    or rows of ``frame_features`` (a store-wide per-frame array, e.g. the feature cache)."""
    store = view.store
    out = []
    for e in view.episodes:
        start, end = store.episode_range(int(e))
        if frame_features is not None:
            out.append(np.asarray(frame_features[start:end], np.float32))
        else:
            out.append(np.concatenate([store.read(k, start, end).reshape(end - start, -1) for k in keys], axis=1))
    return out


def dynamics_samples(features: Sequence[np.ndarray], actions: Sequence[np.ndarray],
                     horizon: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(f_t [N, D], a_t..a_{t+k-1} [N, k, A], f_{t+k} [N, D])`` for every t with t + k inside its episode."""
    now, acts, later = [], [], []
    for f, a in zip(features, actions):
        for t in range(len(f) - horizon):
            now.append(f[t]), acts.append(a[t:t + horizon]), later.append(f[t + horizon])
    if not now:
        raise ValueError(f"no episode is longer than the dynamics horizon {horizon}")
    return np.asarray(now, np.float32), np.asarray(acts, np.float32), np.asarray(later, np.float32)


def fit_latent_dynamics(config: LatentDynamicsConfig, features: Sequence[np.ndarray], actions: Sequence[np.ndarray],
                        steps: int = 2000, batch_size: int = 256, lr: float = 5e-4, holdout: float = 0.2,
                        seed: int = 0) -> tuple[LatentDynamics, dict[str, float]]:
    """Train a :class:`LatentDynamics` on episodes (held out: the last ``holdout`` of them) and
    report its held-out error next to predicting no change (both on standardised features)."""
    torch.manual_seed(seed)
    held = max(1, int(round(len(features) * holdout))) if len(features) > 1 else 0
    train_f, train_a, train_y = map(torch.from_numpy, dynamics_samples(features[:len(features) - held],
                                                                      actions[:len(actions) - held], config.horizon))
    model = LatentDynamics(config)
    model.set_statistics(train_f, train_a.flatten(0, 1))
    optimiser = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    rng = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        pick = torch.randint(len(train_f), (min(batch_size, len(train_f)),), generator=rng)
        loss = model.loss(train_f[pick], train_a[pick], train_y[pick])
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    model.eval()
    metrics = {"train_samples": len(train_f), "train_mse": float(loss.detach())}
    if held:
        f, a, y = map(torch.from_numpy, dynamics_samples(features[-held:], actions[-held:], config.horizon))
        with torch.no_grad():
            metrics["heldout_mse"] = float(model.loss(f, a, y))
            metrics["no_change_mse"] = float(((y - f) / model.feature_std).pow(2).mean())
    return model, metrics


def build_phase_guide(demos: Any, out_dir: str | Path, *, rollouts: Sequence[Any] = (), encoder: Any = None,
                      horizon: int = 8, hidden_dims: Sequence[int] = (256, 256), steps: int = 2000,
                      phase_settings: PhaseSettings | None = None, seed: int = 0) -> dict[str, Any]:
    """Fit the dynamics model on ``demos`` (an EpisodeView of one task's demos; its successes
    make the prototypes) plus ``rollouts`` (views of base rollouts, successes and failures) and
    write both to ``out_dir``. ``encoder``: a frame encoder for the pixel variant (its cached
    features), None for the state variant. Returns what ``guide.json`` holds."""
    phase_settings = phase_settings or PhaseSettings(delta_steps=horizon)
    tasks = sorted({str(t) for v in (demos, *rollouts) for t in v.meta["task"]})
    if len(tasks) != 1:
        raise ValueError(f"a phase guide is built for one task; its episodes are of tasks {tasks or 'none'}")
    task, successes = tasks[0], demos.view(success=True)
    check_enough_demos(successes.num_episodes, phase_settings)  # before any training
    features, actions, kinds = [], [], []
    for view in (demos, *rollouts):
        if encoder is None:
            keys, name, frames = list(STATE_FEATURE_KEYS), STATE_ENCODER, None
            missing = [k for k in keys if k not in view.store.keys]
            if missing:
                raise ValueError(f"store {view.store.path} has no {missing} (keys: {', '.join(view.store.keys)}); "
                                 f"the state guide reads {keys}")
        else:
            keys, name, frames = [FEATURES_KEY], encoder.identity(), cached_frame_features(view.store, encoder)
        features += episode_features(view, keys, frames)
        actions += episode_features(view, ["action"])
        kinds += [("demo" if view is demos else "rollout", bool(s)) for s in view.meta["success"]]
    order = np.random.default_rng(seed).permutation(len(features))  # hold out a mix of demos and rollouts
    config = LatentDynamicsConfig(task=task, encoder=name, feature_keys=keys, feature_dim=features[0].shape[1],
                                  action_dim=actions[0].shape[1], horizon=horizon, hidden_dims=list(hidden_dims))
    dynamics, metrics = fit_latent_dynamics(config, [features[i] for i in order], [actions[i] for i in order],
                                            steps=steps, seed=seed)
    demo_frames = None if encoder is None else cached_frame_features(successes.store, encoder)
    prototypes = build_phase_prototypes(episode_features(successes, keys, demo_frames), phase_settings, task, name)
    out_dir = Path(out_dir)
    dynamics.save(out_dir / "dynamics")
    prototypes.save(out_dir / "prototypes")
    record = {"task": task, "encoder": name, "demos": successes.num_episodes,
              "rollouts": sum(kind == "rollout" for kind, _ in kinds),
              "rollout_successes": sum(kind == "rollout" and ok for kind, ok in kinds),
              "dynamics": {**metrics, "horizon": horizon, "steps": steps},
              "phases": asdict(phase_settings),
              "thresholds": {"lower": prototypes.lower.tolist(), "upper": prototypes.upper.tolist()}}
    (out_dir / "guide.json").write_text(json.dumps(record, indent=2))
    return record


def load_phase_guide(directory: str | Path, policy: Any, task: str,
                     settings: PCGSettings | None = None) -> PhaseGuidedSampler:
    """The PCG sampler of ``policy`` on ``task`` with the guide in ``directory``; a guide built
    for another task or encoder than the policy's is a ValueError naming both."""
    directory = Path(directory)
    if not (directory / "dynamics").is_dir() or not (directory / "prototypes").is_dir():
        raise ValueError(f"guide directory {str(directory)!r} lacks dynamics/ or prototypes/; build one with "
                         f"build_phase_guide (benchmarks/bench_reguide.py)")
    encoder = STATE_ENCODER if policy.frame_encoder is None else policy.frame_encoder.identity()
    dynamics = LatentDynamics.load(directory / "dynamics", task=task, encoder=encoder)
    prototypes = PhasePrototypes.load(directory / "prototypes", task=task, encoder=encoder)
    return PhaseGuidedSampler(policy, dynamics, prototypes, settings)
