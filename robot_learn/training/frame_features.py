"""Pixel presets in ``robot-learn train`` (and the benchmarks that train them): pretrain (or reuse) the frame encoder, then
cache its features for the demo store, so the policy trains at state-policy speed.

1. The encoder is keyed by its settings and the tasks it was pretrained on, and kept
   under ``data/frame_encoders/``; the same settings reuse it.
2. Its features for every demo frame go to the store's feature cache, which records
   the encoder's identity; a cache from another encoder is rebuilt.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from pathlib import Path
from typing import Any

import numpy as np



def prepare_frame_features(policy_config: Any, view: Any, task: str, data_path: str,
                           device: str = "auto") -> tuple[Any, Any, dict]:
    """``(policy_config, encoder, {"features": per-frame array})`` for a pixel preset;
    ``(policy_config, None, {})`` for any other policy. The returned config carries the
    encoder's full settings (vocabulary, label names), so the policy can hold it."""
    from robot_learn.policies.frame_encoder import FEATURES_KEY
    from robot_learn.training.distributed import resolve_device
    from robot_learn.training.frame_pretraining import with_scene_labels

    if not policy_config.frame_encoder:
        return policy_config, None, {}
    policy_config = with_scene_labels(policy_config)
    check_store_has_cameras(view, policy_config, data_path)
    torch_device = resolve_device(device)  # pretraining and caching run where training will
    encoder = ensure_frame_encoder(policy_config, task, Path(data_path).parent / "frame_encoders", torch_device)
    policy_config = dataclasses.replace(policy_config, frame_encoder=dataclasses.asdict(encoder.config))
    if encoder.config.output == "poses":
        return policy_config, encoder, {FEATURES_KEY: true_poses(view, data_path)}
    return policy_config, encoder, {FEATURES_KEY: cached_features(view, encoder, torch_device)}


def true_poses(view: Any, data_path: str) -> np.ndarray:
    """Output ``poses``: the policy trains on every frame's true object poses (from the
    store's ``env_state``; sim demos only, training only) and deploys on the encoder's
    predictions of them. Features computed from the encoder's own predictions would be
    noisy on the demo frames, and a policy fitted to noisy inputs learns to trust them
    less (it aimed short of the cube, toward the table's centre)."""
    from robot_learn.envs.base_env import object_pose_labels

    if "env_state" not in view.store.schema:
        raise ValueError(f"demo store {data_path} has no 'env_state'; frame_encoder.output=poses trains on the true "
                       "object poses of simulated demos. Use output=latent for stores without them")
    return object_pose_labels(view.store.read("env_state"))


def encoder_settings_key(policy_config: Any, tasks: list[str], device: Any = "cpu") -> str:
    """Hash of what makes an encoder: its settings and its pretraining, each with every
    default filled in (so a default changed in the code makes another encoder, never a stale
    one reused), the precision it pretrains in on ``device``, its tasks and the version of the
    rendered scenes."""
    import torch

    from robot_learn.envs.scene_frames import SCENE_FRAMES_VERSION
    from robot_learn.policies.frame_encoder import FrameEncoderConfig, FramePretrainConfig
    from robot_learn.training.precision import runs_bf16

    # The output setting only says what policies read, so every output shares one pretraining.
    settings = dataclasses.asdict(FrameEncoderConfig(**policy_config.frame_encoder))
    settings.pop("output")
    # Fine-tuning happens inside the policy, after pretraining: it does not make another encoder.
    pretraining = {k: v for k, v in dataclasses.asdict(FramePretrainConfig(**policy_config.frame_pretraining)).items()
                   if not k.startswith("finetune_")}
    # The precision it really pretrains in: cpu_bf16 on a CPU without native bf16, or on a GPU, is fp32.
    if runs_bf16(False, pretraining.pop("cpu_bf16"), torch.device(device)):
        pretraining["precision"] = "bf16"
    document = {"frame_encoder": settings, "frame_pretraining": pretraining,
                "tasks": tasks, "scene_frames": SCENE_FRAMES_VERSION}
    return hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()[:10]


def check_store_has_cameras(view: Any, policy_config: Any, path: str) -> None:
    """The demo store must hold the encoder's cameras at the encoder's resolution."""
    settings = policy_config.frame_encoder
    size = int(settings.get("image_size", 96))
    schema = view.store.schema
    for camera in settings.get("cameras", ["front", "wrist"]):
        key = f"images/{camera}"
        if key not in schema:
            raise ValueError(f"demo store {path} has no '{key}' (keys: {', '.join(schema)}); this pixel preset needs "
                           f"camera '{camera}'. Set data.path to a new store to collect demos with images")
        if tuple(schema[key]["shape"]) != (size, size, 3):
            raise ValueError(f"demo store {path}: '{key}' frames are {tuple(schema[key]['shape'])}, but the frame "
                           f"encoder reads ({size}, {size}, 3); set policy.frame_encoder.image_size or collect "
                           f"a new store")


def ensure_frame_encoder(policy_config: Any, task: str, root: Path, device: Any = "cpu") -> Any:
    """Load the encoder these settings made before, or render scenes and pretrain one."""
    from robot_learn.envs.scene_frames import render_scene_frames
    from robot_learn.policies.frame_encoder import FrameEncoder, FrameEncoderConfig, FramePretrainConfig
    from robot_learn.training.frame_pretraining import pretrain_frame_encoder

    pretrain = FramePretrainConfig(**policy_config.frame_pretraining)
    output = FrameEncoderConfig(**policy_config.frame_encoder).output
    tasks = pretrain.tasks or [task]
    directory = root / f"{'_'.join(tasks)}_{encoder_settings_key(policy_config, tasks, device)}"
    if (directory / "model.safetensors").exists():
        try:
            encoder = FrameEncoder.load(directory)
        except ValueError as exc:
            raise ValueError(f"{exc}; delete {directory} to pretrain it again") from None
        encoder.config.output = output
        print(f"      using the frame encoder in {directory} ({encoder.identity()})")
        return encoder
    encoder_config = FrameEncoderConfig(**policy_config.frame_encoder)
    columns = scene_label_columns(encoder_config.label_names) if encoder_config.signal == "privileged" else None
    t0 = time.perf_counter()
    frames = render_scene_frames(tasks, pretrain.resets, pretrain.expert_episodes, cameras=encoder_config.cameras,
                                 image_size=encoder_config.image_size, seed=pretrain.seed, noise=pretrain.noise,
                                 every=pretrain.every, near_object=pretrain.near_object, held=pretrain.held,
                                 placed=pretrain.placed, progress_bar=True)
    render_s = time.perf_counter() - t0
    encoder, metrics = pretrain_frame_encoder(
        frames.images, None if columns is None else frames.labels[:, columns], frames.instruction,
        encoder_config, pretrain, progress_bar=True, device=device, tasks=frames.task)
    metrics.update(render_s=render_s, signal=encoder_config.signal, tasks=tasks)
    encoder.save(directory)
    (directory / "pretraining.json").write_text(json.dumps(metrics, indent=2))
    shown = {k: round(v, 3) if isinstance(v, float) else v for k, v in metrics.items() if k != "per_task"}
    print(f"      frame encoder saved to {directory}: {shown}")
    for t, m in metrics.get("per_task", {}).items():
        print(f"        {t}: " + ", ".join(f"{k} {v:.3f}" for k, v in m.items() if k.endswith(("median", "p90"))))
    return encoder


def scene_label_columns(names: list[str]) -> list[int]:
    """Where each of ``names`` sits among the rendered scene labels (``SCENE_LABELS``), so an
    encoder can learn a subset; an unknown name is refused before anything is rendered."""
    from robot_learn.envs.base_env import SCENE_LABELS

    unknown = [n for n in names if n not in SCENE_LABELS]
    if unknown:
        raise ValueError(f"policy.frame_encoder.label_names has unknown labels {unknown}; valid: {', '.join(SCENE_LABELS)}")
    return [SCENE_LABELS.index(n) for n in names]


def cached_features(view: Any, encoder: Any, device: Any = "cpu") -> np.ndarray:
    """Every committed frame's features, from the store's cache (built if missing or stale)."""
    from robot_learn.training.frame_feature_cache import cached_frame_features

    return cached_frame_features(view.store, encoder, device, progress_bar=True)

