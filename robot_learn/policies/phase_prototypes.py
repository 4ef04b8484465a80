"""Phase prototypes from demonstrations (ReGuide's phase targets).

From the demos' per-frame features f (state, or the frame encoder's features):
1. x = [f, w (f_t - f_{t-k})] (the features and their change over the dynamics model's
   horizon k, weighted w = 0.3), standardised, then PCA (numpy SVD; scikit-learn is not
   in our environment) to ``components`` dims. Columns whose demo std is below ``min_std``
   are left out (zero loadings): constant in the demos, they cannot tell phases apart, and
   a rollout's value off that constant (a tipped cube's orientation) would otherwise be
   divided by a near-zero std and swamp every distance;
2. KMeans (k-means++ start, Lloyd steps) with K = ``clusters_per_phase`` x ``phases``;
3. clusters ordered by the median normalised demo time of their frames and merged into
   ``phases`` macro phases by time bins (equal runs of ordered clusters when a bin is empty);
4. each phase keeps up to ``prototypes_per_phase`` farthest-point prototypes of its frames;
5. thresholds: percentiles (``lower_percentile``, ``upper_percentile``) of the demo frames'
   soft-min distance to their own phase's prototypes, held out: with ``threshold_folds``
   folds each demo's frames are measured against prototypes built without that demo. In
   sample, a frame is near its own copy among the prototypes, and the band came out so
   tight (upper 1.0-2.1 on stack with 30 demos) that unseen expert frames (median 3.0)
   already fell beyond it; 0 or 1 folds keep the in-sample thresholds.

Distances are soft-min (temperature ``temperature``) Euclidean distances in the PCA space:
d = -tau log sum_m exp(-|z - p_m| / tau), differentiable for guidance. Saved as
``config.yaml`` + ``prototypes.safetensors`` with the task and encoder they were built with.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
from safetensors.torch import load_file

from robot_learn.policies.config_checks import check_at_least
from robot_learn.policies.latent_dynamics import check_trained_for, read_checkpoint_config, write_checkpoint

PROTOTYPES_FILE = "prototypes.safetensors"
TENSORS = ("mean", "std", "components", "prototypes", "mask", "lower", "upper")


@dataclass
class PhaseSettings:
    """How demos become phases, prototypes and thresholds (ReGuide's defaults where ours fit)."""

    phases: int = 4
    clusters_per_phase: int = 10
    components: int = 32
    prototypes_per_phase: int = 64
    delta_steps: int = 8          # k: the change is taken over the dynamics model's horizon
    delta_weight: float = 0.3
    lower_percentile: float = 50.0
    upper_percentile: float = 80.0
    temperature: float = 0.1
    min_std: float = 5e-3         # columns steadier than this in the demos are left out
    threshold_folds: int = 5      # thresholds from demos held out of the prototypes (0/1: in sample)
    kmeans_iterations: int = 50
    seed: int = 0

    def __post_init__(self) -> None:
        check_at_least(self, ("phases", "clusters_per_phase", "components", "prototypes_per_phase", "delta_steps",
                              "kmeans_iterations"), 1)
        check_at_least(self, ("threshold_folds",), 0)
        if not 0.0 <= self.lower_percentile < self.upper_percentile <= 100.0:
            raise ValueError(f"phase thresholds need 0 <= lower_percentile < upper_percentile <= 100, got "
                             f"{self.lower_percentile} and {self.upper_percentile}")
        if not self.temperature > 0:
            raise ValueError(f"temperature must be > 0, got {self.temperature}")
        if not self.min_std >= 0:
            raise ValueError(f"min_std must be >= 0, got {self.min_std}")


class PhasePrototypes:
    """Each phase's prototypes in the PCA space and its distance thresholds ``lower``/``upper``."""

    def __init__(self, settings: PhaseSettings, task: str, encoder: str, tensors: dict[str, torch.Tensor]) -> None:
        self.settings, self.task, self.encoder = settings, str(task), str(encoder)
        self.mean, self.std, self.components = tensors["mean"], tensors["std"], tensors["components"]
        self.prototypes, self.mask = tensors["prototypes"], tensors["mask"].bool()
        self.lower, self.upper = tensors["lower"], tensors["upper"]

    @property
    def num_phases(self) -> int:
        return int(self.prototypes.shape[0])

    @property
    def feature_dim(self) -> int:
        return int(self.mean.shape[0]) // 2

    def embed(self, features: torch.Tensor, earlier: torch.Tensor) -> torch.Tensor:
        """PCA coordinates ``[B, C]`` of ``features`` with their change since ``earlier`` (k steps before)."""
        x = torch.cat([features, self.settings.delta_weight * (features - earlier)], dim=-1)
        return ((x - self.mean.to(x)) / self.std.to(x)) @ self.components.to(x)

    def distance(self, z: torch.Tensor, phase: torch.Tensor) -> torch.Tensor:
        """Soft-min distance ``[B]`` of each row of ``z`` to the prototypes of its ``phase`` (``[B]`` ints)."""
        protos, mask = self.prototypes.to(z)[phase], self.mask.to(z.device)[phase]  # [B, M, C], [B, M]
        dist = ((z.unsqueeze(1) - protos).pow(2).sum(-1) + 1e-12).sqrt()
        tau = self.settings.temperature
        return -tau * torch.logsumexp((-dist / tau).masked_fill(~mask, float("-inf")), dim=1)

    def save(self, directory: str | Path) -> None:
        """``config.yaml`` (task, encoder, settings) + ``prototypes.safetensors``."""
        config = {"task": self.task, "encoder": self.encoder, "settings": asdict(self.settings)}
        write_checkpoint(directory, "phase_prototypes", config, {n: getattr(self, n).float() for n in TENSORS},
                         PROTOTYPES_FILE)

    @classmethod
    def load(cls, directory: str | Path, task: str | None = None, encoder: str | None = None) -> "PhasePrototypes":
        """Load saved prototypes; another task or encoder than the wanted one is a ValueError naming both."""
        directory = Path(directory)
        config = read_checkpoint_config(directory, "phase_prototypes")
        check_trained_for("phase prototypes", directory, config["task"], config["encoder"], task, encoder)
        try:
            tensors = load_file(str(directory / PROTOTYPES_FILE))
            return cls(PhaseSettings(**config["settings"]), config["task"], config["encoder"], tensors)
        except (OSError, KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"cannot load phase prototypes from {str(directory)!r}: {str(exc).splitlines()[0]}") from None


def build_phase_prototypes(episodes: Sequence[np.ndarray], settings: PhaseSettings, task: str,
                           encoder: str) -> PhasePrototypes:
    """Prototypes from demo episodes, each ``[T_e, D]`` per-frame features (see the module docstring).
    Fewer demos than phases is a ValueError."""
    check_enough_demos(len(episodes), settings)
    k, w = settings.delta_steps, settings.delta_weight
    frames, earlier, times = [], [], []
    for f in episodes:
        f = np.asarray(f, np.float64)
        frames.append(f)
        earlier.append(f[np.maximum(np.arange(len(f)) - k, 0)])
        times.append(np.arange(len(f)) / max(len(f) - 1, 1))
    f, earlier, time = np.concatenate(frames), np.concatenate(earlier), np.concatenate(times)
    x = np.concatenate([f, w * (f - earlier)], axis=1)
    mean, spread = x.mean(0), x.std(0)
    kept = spread >= settings.min_std
    if not kept.any():
        raise ValueError(f"phase prototypes: no feature varies by min_std {settings.min_std} over the demos")
    std = np.maximum(spread, settings.min_std)
    centred = np.where(kept, (x - mean) / std, 0.0)
    _, _, vt = np.linalg.svd(centred - centred.mean(0), full_matrices=False)
    components = vt[: min(settings.components, len(vt))].T
    components[~kept] = 0.0  # exactly: a left-out column moves no coordinate
    z = centred @ components
    rng = np.random.default_rng(settings.seed)
    labels = kmeans(z, min(settings.clusters_per_phase * settings.phases, len(z)), settings.kmeans_iterations, rng)
    phase_of_frame = _macro_phases(labels, time, settings.phases)
    count = settings.prototypes_per_phase
    protos = np.zeros((settings.phases, count, z.shape[1]))
    mask = np.zeros((settings.phases, count), bool)
    for p in range(settings.phases):
        chosen = farthest_points(z[phase_of_frame == p], count)
        protos[p, : len(chosen)], mask[p, : len(chosen)] = chosen, True
    tensors = {"mean": mean, "std": std, "components": components, "prototypes": protos, "mask": mask,
               "lower": np.zeros(settings.phases), "upper": np.zeros(settings.phases)}
    result = PhasePrototypes(settings, task, encoder, {n: torch.as_tensor(v, dtype=torch.float32)
                                                       for n, v in tensors.items()})
    d = _heldout_distances(episodes, settings, task, encoder, phase_of_frame, f, earlier)
    if d is None:
        d = result.distance(torch.as_tensor(z, dtype=torch.float32), torch.as_tensor(phase_of_frame)).numpy()
    for p in range(settings.phases):
        mine = d[phase_of_frame == p]
        result.lower[p] = float(np.percentile(mine, settings.lower_percentile))
        result.upper[p] = float(np.percentile(mine, settings.upper_percentile))
    return result


def _heldout_distances(episodes: Sequence[np.ndarray], settings: PhaseSettings, task: str, encoder: str,
                       phase_of_frame: np.ndarray, frames: np.ndarray, earlier: np.ndarray) -> np.ndarray | None:
    """Each demo frame's distance to its phase's prototypes built without its demo
    (``threshold_folds`` folds); ``frames``/``earlier`` are every demo's frames and the
    frames k steps before them, concatenated. None when a fold would keep fewer demos than phases."""
    n = len(episodes)
    folds = min(settings.threshold_folds, n)
    if folds < 2 or n - math.ceil(n / folds) < settings.phases:
        return None
    in_sample = replace(settings, threshold_folds=0)
    demo_of_frame = np.repeat(np.arange(n), [len(e) for e in episodes])
    frames_t, earlier_t = (torch.as_tensor(a, dtype=torch.float32) for a in (frames, earlier))
    d = np.zeros(len(frames))
    for i in range(folds):
        held = demo_of_frame % folds == i
        model = build_phase_prototypes([e for j, e in enumerate(episodes) if j % folds != i], in_sample, task, encoder)
        z = model.embed(frames_t[held], earlier_t[held])
        d[held] = model.distance(z, torch.as_tensor(phase_of_frame[held])).numpy()
    return d


def check_enough_demos(demos: int, settings: PhaseSettings) -> None:
    """ValueError unless there are at least as many demos as phases."""
    if demos < settings.phases:
        raise ValueError(f"phase prototypes need at least as many demos as phases: got {demos} demos for "
                         f"phases={settings.phases}")


def kmeans(z: np.ndarray, clusters: int, iterations: int, rng: np.random.Generator) -> np.ndarray:
    """Cluster label of each row of ``z`` (k-means++ start, then Lloyd's steps)."""
    centres = [z[rng.integers(len(z))]]
    for _ in range(1, clusters):
        d2 = ((z[:, None] - np.asarray(centres)[None]) ** 2).sum(-1).min(1)
        total = d2.sum()
        centres.append(z[rng.choice(len(z), p=d2 / total)] if total > 0 else z[rng.integers(len(z))])
    centres = np.asarray(centres)
    labels = np.zeros(len(z), int)
    for _ in range(iterations):
        labels = ((z[:, None] - centres[None]) ** 2).sum(-1).argmin(1)
        moved = np.array([z[labels == c].mean(0) if (labels == c).any() else centres[c] for c in range(clusters)])
        if np.allclose(moved, centres):
            break
        centres = moved
    return labels


def _macro_phases(labels: np.ndarray, time: np.ndarray, phases: int) -> np.ndarray:
    """Each frame's macro phase: clusters ordered by median demo time, put into ``phases`` equal
    time bins; if a bin gets no cluster, the ordered clusters are split into equal runs instead."""
    present = np.unique(labels)
    median = np.array([np.median(time[labels == c]) for c in present])
    order = present[np.argsort(median, kind="stable")]
    by_bin = np.minimum((np.sort(median) * phases).astype(int), phases - 1)
    if len(np.unique(by_bin)) < phases:
        by_bin = np.concatenate([np.full(len(run), i) for i, run in enumerate(np.array_split(order, phases))])
    phase_of_cluster = dict(zip(order.tolist(), by_bin.tolist()))
    return np.array([phase_of_cluster[c] for c in labels])


def farthest_points(z: np.ndarray, count: int) -> np.ndarray:
    """Up to ``count`` rows of ``z`` by farthest-point sampling, starting at the row nearest the mean."""
    if len(z) == 0:
        raise ValueError("a phase has no demo frames; use fewer phases or more demos")
    chosen = [int(((z - z.mean(0)) ** 2).sum(1).argmin())]
    nearest = ((z - z[chosen[0]]) ** 2).sum(1)
    while len(chosen) < min(count, len(z)):
        chosen.append(int(nearest.argmax()))
        nearest = np.minimum(nearest, ((z - z[chosen[-1]]) ** 2).sum(1))
    return z[chosen]
