"""Fidelity of a world model on held-out episodes: PSNR and SSIM per predicted step.

From each start step of each held-out episode the model replays the episode's own
actions for ``horizon`` steps on its own predictions, and every imagined frame is
scored against the real one. Copy-last-frame (the start frame, held) is scored the
same way: at 10 Hz most pixels do not move, so it is the baseline to beat. "Moved"
PSNR counts only the pixels whose real value left the start frame's by more than
``MOVED_LEVELS`` in some channel (the arm and what it carries), pooled over rollouts:
what a model gets right there is the content a policy and a judge read.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torchmetrics.functional.image import peak_signal_noise_ratio, structural_similarity_index_measure

from robot_learn.data.views import EpisodeView
from robot_learn.world_models.imagination import Imagination
from robot_learn.world_models.modeling_world_model import VideoWorldModel, stack_cameras

MOVED_LEVELS = 16  # pixel levels (0-255) a real pixel must leave its start value by to count as moved


@dataclass
class FidelityReport:
    """Mean PSNR (dB) and SSIM per horizon step 1..H for the model and copy-last-frame."""

    horizon: int
    rollouts: int
    episodes: list[int]
    model_psnr: list[float] = field(default_factory=list)
    model_ssim: list[float] = field(default_factory=list)
    copy_last_psnr: list[float] = field(default_factory=list)
    copy_last_ssim: list[float] = field(default_factory=list)
    state_rmse: list[float] = field(default_factory=list)
    model_psnr_moved: list[float] = field(default_factory=list)
    copy_last_psnr_moved: list[float] = field(default_factory=list)
    moved_fraction: list[float] = field(default_factory=list)
    diverged: int = 0  # rollouts stopped by a NaN / out-of-range frame (scored up to there)

    def beats_copy_last(self, metric: str = "psnr") -> list[bool]:
        """Per horizon step: the model's ``metric`` (psnr or ssim) is above copy-last's."""
        model, base = {"psnr": (self.model_psnr, self.copy_last_psnr),
                       "ssim": (self.model_ssim, self.copy_last_ssim)}[metric]
        return [m > c for m, c in zip(model, base)]

    def to_markdown(self) -> str:
        lines = [f"Fidelity over {self.rollouts} rollouts from held-out episodes {self.episodes}",
                 "", "| step | model PSNR (dB) | copy-last PSNR (dB) | model SSIM | copy-last SSIM | "
                 "model PSNR, moved pixels | copy-last PSNR, moved pixels | moved share | state RMSE |",
                 "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for h in range(self.horizon):
            lines.append(f"| {h + 1} | {self.model_psnr[h]:.2f} | {self.copy_last_psnr[h]:.2f} | "
                         f"{self.model_ssim[h]:.3f} | {self.copy_last_ssim[h]:.3f} | {self.model_psnr_moved[h]:.2f} | "
                         f"{self.copy_last_psnr_moved[h]:.2f} | {self.moved_fraction[h]:.3f} | {self.state_rmse[h]:.4f} |")
        psnr, ssim = sum(self.beats_copy_last("psnr")), sum(self.beats_copy_last("ssim"))
        lines += ["", f"The model beats copy-last at {psnr} of {self.horizon} steps on PSNR and {ssim} on SSIM; "
                  f"{self.diverged} rollouts diverged."]
        return "\n".join(lines)


def _scores(pred: torch.Tensor, real: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-sample PSNR and SSIM of uint8 ``[B, H, W, 3]`` frames, on [0, 1]."""
    p = pred.permute(0, 3, 1, 2).float() / 255.0
    r = real.permute(0, 3, 1, 2).float() / 255.0
    psnr = peak_signal_noise_ratio(p, r, data_range=1.0, reduction="none", dim=(1, 2, 3))
    ssim = structural_similarity_index_measure(p, r, data_range=1.0, reduction="none")
    return psnr.clamp_max(100.0), ssim  # identical frames give inf PSNR; 100 dB caps them


def _moved_psnr(preds: tuple[torch.Tensor, ...], real: torch.Tensor, start: torch.Tensor) -> tuple[list[float], float]:
    """PSNR of each uint8 frame batch in ``preds`` against ``real`` over the pixels that moved
    from ``start`` (one mask for all; pooled over the batch; 100 dB where none moved), and the
    share of pixels that moved."""
    real = real.float()
    moved = (real - start.float()).abs().amax(dim=-1) > MOVED_LEVELS
    if not moved.any():
        return [100.0] * len(preds), 0.0
    mses = [((pred.float() - real) ** 2).mean(dim=-1)[moved].mean() for pred in preds]
    return ([min(100.0, float(10 * torch.log10(255.0 ** 2 / mse.clamp_min(1e-10)))) for mse in mses],
            float(moved.float().mean()))


def measure_fidelity(model: VideoWorldModel, view: EpisodeView, horizon: int = 20, stride: int = 10,
                     seed: int = 0, camera: str | None = None) -> FidelityReport:
    """Replay ``view``'s episodes in ``model`` from every ``stride``-th start with ``horizon``
    steps left, scoring ``camera``'s frames (None: the model's first camera); ValueError when
    the model does not imagine ``camera`` or no episode is long enough."""
    cameras = model.config.cameras
    camera = camera or cameras[0]
    if camera not in cameras:
        raise ValueError(f"camera '{camera}' is not imagined by this world model; its cameras: {list(cameras)}")
    return measure_fidelity_per_camera(model, view, horizon, stride, seed)[camera]


@torch.no_grad()
def measure_fidelity_per_camera(model: VideoWorldModel, view: EpisodeView, horizon: int = 20, stride: int = 10,
                                seed: int = 0) -> dict[str, FidelityReport]:
    """:func:`measure_fidelity` of every camera the model imagines, from one imagination of them all."""
    if horizon < 1:
        raise ValueError(f"horizon must be >= 1, got {horizon}")
    k, cameras = model.config.history, model.config.cameras
    store = view.store
    frames_all, states_all, actions_all, starts = [], [], [], []
    for ep in view.episodes:
        a, b = int(store.episode_starts[ep]), int(store.episode_ends[ep])
        frames = stack_cameras({c: np.asarray(store.array(f"images/{c}")[a:b]) for c in cameras}, cameras)
        states = np.asarray(store.array("state")[a:b], dtype=np.float32)
        actions = np.asarray(store.array("action")[a:b], dtype=np.float32)
        for t0 in range(k - 1, len(frames) - horizon, stride):
            frames_all.append(frames[t0 - k + 1: t0 + horizon + 1])
            states_all.append(states[t0 - k + 1: t0 + horizon + 1])
            actions_all.append(actions[t0: t0 + horizon])
            starts.append((int(ep), t0))
    if not starts:
        raise ValueError(f"no held-out episode of {view.episodes.tolist()} has more than "
                         f"{horizon + k - 1} steps; lower horizon")
    frames = torch.as_tensor(np.stack(frames_all))
    states = torch.as_tensor(np.stack(states_all))
    actions = np.stack(actions_all)
    generator = torch.Generator(device=model.device).manual_seed(seed)
    imagination = Imagination(model, frames[:, :k], states[:, :k], generator=generator)
    alive = torch.ones(len(starts), dtype=torch.bool)
    reports = {c: FidelityReport(horizon=horizon, rollouts=len(starts), episodes=view.episodes.tolist())
               for c in cameras}
    channels = {c: slice(3 * i, 3 * i + 3) for i, c in enumerate(cameras)}
    for h in range(horizon):
        imagined, state, problems = imagination.step(actions[:, h])
        alive &= torch.tensor([p is None for p in problems])
        state_rmse = float(((state.cpu() - states[:, k + h]) ** 2).mean().sqrt())
        for camera, report in reports.items():
            frame = imagined[..., channels[camera]].cpu()
            last, real = frames[:, k - 1, ..., channels[camera]], frames[:, k + h, ..., channels[camera]]
            psnr, ssim = _scores(frame, real)
            base_psnr, base_ssim = _scores(last, real)
            # A diverged rollout keeps its last score: at worst what the clipped frame earns.
            report.model_psnr.append(float(psnr.mean()))
            report.model_ssim.append(float(ssim.mean()))
            report.copy_last_psnr.append(float(base_psnr.mean()))
            report.copy_last_ssim.append(float(base_ssim.mean()))
            report.state_rmse.append(state_rmse)
            (model_moved, copy_moved), moved = _moved_psnr((frame, last), real, last)
            report.model_psnr_moved.append(model_moved)
            report.copy_last_psnr_moved.append(copy_moved)
            report.moved_fraction.append(moved)
    for report in reports.values():
        report.diverged = int((~alive).sum())
    return reports


def write_fidelity_report(report: FidelityReport, out_dir: str | Path, title: str,
                          extra: dict[str, Any] | None = None) -> dict[str, Path]:
    """``fidelity.json``, ``fidelity.md`` and ``fidelity.png`` (PSNR, SSIM and moved-pixel PSNR per
    step) in ``out_dir``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "fidelity.json", "markdown": out / "fidelity.md", "plot": out / "fidelity.png"}
    paths["json"].write_text(json.dumps({**asdict(report), **(extra or {})}, indent=2))
    paths["markdown"].write_text(f"# {title}\n\n{report.to_markdown()}\n")
    steps = range(1, report.horizon + 1)
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.4))
    for ax, name, model, base in ((axes[0], "PSNR (dB)", report.model_psnr, report.copy_last_psnr),
                                  (axes[1], "SSIM", report.model_ssim, report.copy_last_ssim),
                                  (axes[2], "PSNR on moved pixels (dB)", report.model_psnr_moved,
                                   report.copy_last_psnr_moved)):
        ax.plot(steps, model, marker="o", ms=3, label="world model")
        ax.plot(steps, base, marker="s", ms=3, label="copy-last-frame")
        ax.set_xlabel("predicted step (10 Hz)")
        ax.set_ylabel(name)
        ax.grid(alpha=0.3)
    axes[0].legend()
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(paths["plot"], dpi=120)
    plt.close(fig)
    return paths
