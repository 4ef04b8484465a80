"""Pretraining the shared `FrameEncoder` on rendered scenes (before any policy).

The frames come as plain arrays (``images`` per camera, ``labels``, ``instruction``),
e.g. from ``robot_learn.envs.scene_frames.render_scene_frames``. A held-out tenth
measures what the encoder learnt: for the privileged signal, the xy error of the
object the instruction names, which is what a policy needs from the frame.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from robot_learn.policies.frame_encoder import FrameEncoder, FrameEncoderConfig, FramePretrainConfig
from robot_learn.policies.text_encoder import build_vocab
from robot_learn.training.precision import autocast, autocast_dtype


def pretrain_frame_encoder(images: Mapping[str, np.ndarray], labels: np.ndarray | None,
                           instructions: Sequence[str], encoder_config: FrameEncoderConfig,
                           config: FramePretrainConfig | None = None, progress_bar: bool = False,
                           device: str | torch.device = "cpu",
                           tasks: Sequence[str] | None = None) -> tuple[FrameEncoder, dict[str, Any]]:
    """Train a new encoder on ``device``; returns it on the CPU (eval mode) and held-out metrics,
    also per task (``per_task``) when ``tasks`` gives each frame's task and there are several.
    (``config``'s scene settings, ``tasks`` to ``noise``, are for whoever renders the frames.)"""
    from tqdm import tqdm

    config = config or FramePretrainConfig()
    n = len(instructions)
    if any(len(v) != n for v in images.values()) or (labels is not None and len(labels) != n):
        raise ValueError(f"frames disagree on their count: instructions {n}, images "
                         f"{ {c: len(v) for c, v in images.items()} }, labels {None if labels is None else len(labels)}")
    if encoder_config.vocab == [] and encoder_config.signal == "privileged":
        encoder_config.vocab = build_vocab(instructions)
    torch.manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)
    order = rng.permutation(n)
    n_val = max(1, int(round(n * config.val_fraction)))
    val, train = order[:n_val], order[n_val:]
    encoder = FrameEncoder(encoder_config)
    if labels is not None and encoder.label_head is not None:
        encoder.label_mean.copy_(torch.from_numpy(labels[train].mean(0)))
        encoder.label_std.copy_(torch.from_numpy(labels[train].std(0) + 1e-3))
    encoder.to(device)
    precision = autocast_dtype(False, config.cpu_bf16, torch.device(device), "frame_pretraining.cpu_bf16")
    optimizer = torch.optim.AdamW(encoder.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=config.lr, total_steps=config.steps,
                                                   pct_start=max(0.05, 2 / config.steps))  # >= 2 warm-up steps
    t0 = time.perf_counter()
    encoder.train()
    bar = tqdm(range(config.steps), desc="pretrain frame encoder", unit="step", disable=not progress_bar)
    for step in bar:
        idx = rng.choice(train, size=config.batch_size)
        with autocast(torch.device(device), precision):
            loss = encoder.loss(*_batch(images, labels, instructions, idx, device))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        schedule.step()
        if step % 100 == 0:
            bar.set_postfix(loss=f"{loss.item():.4f}")
    encoder.eval()
    metrics = {"frames": n, "train_frames": len(train), "val_frames": len(val), "steps": config.steps,
               "time_s": time.perf_counter() - t0, "identity": encoder.identity(),
               "precision": "bf16" if precision is not None else "fp32"}
    metrics.update(evaluate_frame_encoder(encoder, images, labels, instructions, val))
    if tasks is not None and len(set(tasks)) > 1:
        frame_tasks = np.asarray(tasks)[val]
        metrics["per_task"] = {t: evaluate_frame_encoder(encoder, images, labels, instructions, val[frame_tasks == t])
                               for t in sorted(set(frame_tasks))}
    return encoder.cpu(), metrics


@torch.no_grad()
def evaluate_frame_encoder(encoder: FrameEncoder, images: Mapping[str, np.ndarray], labels: np.ndarray | None,
                           instructions: Sequence[str], index: np.ndarray | None = None,
                           batch_size: int = 256, grasp_range_m: float = 0.05) -> dict[str, float]:
    """Held-out loss and, for the privileged signal, the xy error (cm) of the named object
    (and of where it must be put down, with ``goal_x`` among the labels); with the grasp
    centre among the labels, also the xy error of the object's offset from the grasp
    centre on approach frames: the gripper open and the object within ``grasp_range_m``
    of it (the offset a grasp needs; from the move and grasp-centre heads)."""
    index = np.arange(len(instructions)) if index is None else np.asarray(index)
    names = encoder.config.label_names
    xy = [names.index("move_x"), names.index("move_y")] if "move_x" in names else [0, 1]
    approach = "tcp_x" in names and "gripper" in names
    tcp, gripper = ([names.index("tcp_x"), names.index("tcp_y")], names.index("gripper")) if approach else (None, None)
    goal = [names.index("goal_x"), names.index("goal_y")] if "goal_x" in names else None
    losses, errors, offset_errors, goal_errors = [], [], [], []
    for start in range(0, len(index), batch_size):
        idx = index[start:start + batch_size]
        batch = _batch(images, labels, instructions, idx, next(encoder.parameters()).device)
        losses.append(float(encoder.loss(*batch)) * len(idx))
        if encoder.label_head is not None and labels is not None:
            predicted, true = encoder.predict_labels(encoder(batch[0], batch[1])), batch[2]
            errors.append(torch.linalg.norm(predicted[:, xy] - true[:, xy], dim=-1).cpu().numpy() * 100.0)
            if goal is not None:
                goal_errors.append(torch.linalg.norm(predicted[:, goal] - true[:, goal], dim=-1).cpu().numpy() * 100.0)
            if tcp is not None:
                offset, true_offset = predicted[:, xy] - predicted[:, tcp], true[:, xy] - true[:, tcp]
                near = (torch.linalg.norm(true_offset, dim=-1) < grasp_range_m) & (true[:, gripper] < 0.5)
                offset_errors.append(torch.linalg.norm(offset - true_offset, dim=-1)[near].cpu().numpy() * 100.0)
    out = {"val_loss": sum(losses) / len(index)}
    for name, parts in (("move_xy_error_cm", errors), ("grasp_offset_error_cm", offset_errors),
                        ("goal_xy_error_cm", goal_errors)):
        err = np.concatenate(parts) if parts else np.empty(0)
        if len(err):
            out.update({f"{name}_median": float(np.median(err)), f"{name}_p90": float(np.percentile(err, 90))})
    if offset_errors:
        out["grasp_frames"] = int(sum(map(len, offset_errors)))
    return out


def _batch(images: Mapping[str, np.ndarray], labels: np.ndarray | None, instructions: Sequence[str],
           idx: np.ndarray, device: str | torch.device = "cpu") -> tuple[dict[str, torch.Tensor], list[str], torch.Tensor | None]:
    frames = {c: torch.from_numpy(np.ascontiguousarray(v[idx])).to(device) for c, v in images.items()}
    text = [instructions[i] for i in idx]
    target = torch.from_numpy(labels[idx]).to(device) if labels is not None else None
    return frames, text, target


def with_scene_labels(policy_config: Any) -> Any:
    """The config with the privileged encoder's label names filled in from the envs."""
    from robot_learn.envs.base_env import SCENE_LABELS

    settings = dict(policy_config.frame_encoder)
    if settings and settings.get("signal", "privileged") == "privileged" and not settings.get("label_names"):
        settings["label_names"] = list(SCENE_LABELS)
        return dataclasses.replace(policy_config, frame_encoder=settings)
    return policy_config
