"""Import a LeRobotDataset v3 (local root or Hub repo id) into an episode store.

The dataset is opened with the real `lerobot` package (metadata, version check,
Hub download, parquet rows); video frames are decoded per episode with PyAV at
the timestamps lerobot's metadata gives (see `lerobot_video`).
"""

from __future__ import annotations

import json
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from robot_learn.data import EpisodeStore, StoreError
from robot_learn.data.schema import META_FIELDS, SOURCES
from robot_learn.interop.lerobot_keys import (
    DEFAULT_STORE_FPS, META_FEATURES, STEP_FEATURES, InteropError, camera_name,
    check_codebase_version, record_fps, recorded_fps, require_lerobot,
)
from robot_learn.interop.lerobot_video import VideoDecodeError, decode_frames

_REPO_ID = re.compile(r"^[\w.\-]+/[\w.\-]+$")
_SCALAR_KEYS = ("reward", "progress", "phase", "intervention", "timestamp")


class SkippedEpisodeWarning(UserWarning):
    """An episode could not be read (e.g. its video does not decode) and was left out."""


@dataclass
class ImportSummary:
    """What `import_lerobot` did."""

    dataset: str
    out: Path
    fps: int
    cameras: dict[str, str]  # LeRobot feature -> store key
    episodes: int = 0
    frames: int = 0
    skipped: list[tuple[int, str]] = field(default_factory=list)  # (LeRobot episode, reason)

    def __str__(self) -> str:
        cams = ", ".join(f"{k} -> {v}" for k, v in self.cameras.items()) or "none"
        lines = [f"imported {self.episodes} episodes ({self.frames} frames, {self.fps} fps) "
                 f"from {self.dataset} into {self.out}", f"cameras: {cams}",
                 f"skipped: {len(self.skipped)} episodes"]
        lines += [f"  episode {ep}: {why}" for ep, why in self.skipped]
        return "\n".join(lines)


def import_lerobot(root_or_repo_id: str | Path, out: str | Path, *,
                   cameras: Sequence[str] | None = None, fps: int | None = None,
                   task: str | None = None, source: str = "teleop",
                   success: bool = True) -> ImportSummary:
    """Append every episode of a LeRobotDataset v3 to the store at `out` (created if absent).

    `cameras`: LeRobot camera features (full name or short name, e.g. `front`) to
    import; default all. `fps`: the rate the data must have (error otherwise).
    `task`, `source`, `success`: per-episode metadata for datasets that do not carry
    our own fields (a dataset exported by robot-learn brings its own). Episodes
    whose video does not decode are skipped with a SkippedEpisodeWarning."""
    if source not in SOURCES:
        raise InteropError(f"unknown source {source!r}; valid sources: {', '.join(SOURCES)}")
    ds = _open_dataset(require_lerobot(), str(root_or_repo_id))
    features = ds.meta.features
    if "action" not in features:
        raise InteropError(f"{root_or_repo_id}: dataset has no 'action' feature; "
                           f"its features: {', '.join(features)}")
    if fps is not None and int(fps) != ds.fps:
        raise InteropError(f"{root_or_repo_id}: dataset is recorded at {ds.fps} fps, "
                           f"expected {fps} fps; pass the dataset's rate or leave fps unset")
    chosen = _choose_cameras(ds.meta.camera_keys, cameras, str(root_or_repo_id))
    store = _open_store(Path(out), ds.fps)
    summary = ImportSummary(str(root_or_repo_id), Path(out), ds.fps, chosen)
    reader = _EpisodeReader(ds, chosen)
    keys = {*reader.step_keys, *chosen.values()}
    if store.num_episodes and keys != set(store.keys):
        raise InteropError(
            f"store {str(out)!r} has keys {sorted(store.keys)} but the dataset gives "
            f"{sorted(keys)} (missing in dataset: {sorted(set(store.keys) - keys)}, new: "
            f"{sorted(keys - set(store.keys))}); pick cameras with `cameras=` or use a new store")
    defaults = {"task": task or ds.repo_id.split("/")[-1], "source": source, "success": success}
    for ep in range(ds.meta.total_episodes):
        try:
            steps, meta = reader.read(ep)
        except VideoDecodeError as exc:
            warnings.warn(f"skipping LeRobot episode {ep}: {exc}", SkippedEpisodeWarning,
                          stacklevel=2)
            summary.skipped.append((ep, str(exc)))
            continue
        store.append_episode(steps, {**defaults, "seed": ep, **meta})
        summary.episodes += 1
        summary.frames += len(steps["action"])
    return summary


def _open_dataset(lerobot_dataset: Any, where: str) -> Any:
    local = Path(where)
    if local.exists():
        info_path = local / "meta" / "info.json"
        if not info_path.is_file():
            raise InteropError(f"{where!r} is not a LeRobotDataset root: it has no meta/info.json")
        info = json.loads(info_path.read_text())
        check_codebase_version(str(info.get("codebase_version", "unknown")), repr(where))
        repo_id, root = f"local/{local.resolve().name}", local
    elif _REPO_ID.match(where):
        repo_id, root = where, None
    else:
        raise InteropError(f"{where!r} is neither a local LeRobotDataset root (no such "
                           "directory) nor a Hub repo id of the form 'owner/name'")
    from lerobot.datasets.backward_compatibility import CompatibilityError

    try:
        return lerobot_dataset.LeRobotDataset(repo_id, root=root, video_backend="pyav")
    except CompatibilityError as exc:
        raise InteropError(f"{where!r}: {exc}") from exc
    except Exception as exc:  # lerobot/datasets/hub raise many types; name the cause
        hint = "" if root is not None else " (Hub ids need network access to the Hub)"
        raise InteropError(f"cannot load LeRobotDataset {where!r}{hint}: "
                           f"{type(exc).__name__}: {exc}") from exc


def _choose_cameras(available: Sequence[str], wanted: Sequence[str] | None,
                    where: str) -> dict[str, str]:
    by_short = {camera_name(f): f for f in available}
    if wanted is None:
        picked = list(available)
    else:
        picked = []
        for cam in wanted:
            feature = cam if cam in available else by_short.get(cam)
            if feature is None:
                raise InteropError(f"camera {cam!r} is not in {where}; its cameras: "
                                   f"{', '.join(available) or '(none)'}")
            picked.append(feature)
    keys = {f: f"images/{camera_name(f)}" for f in picked}
    if len(set(keys.values())) != len(keys):
        raise InteropError(f"cameras {picked} map to clashing store keys {list(keys.values())}")
    return keys


def _open_store(out: Path, fps: int) -> EpisodeStore:
    if out.exists() and any(out.iterdir()):
        try:
            store = EpisodeStore.open(out, mode="a")
        except StoreError as exc:
            raise InteropError(f"--out {str(out)!r} exists and is not an episode store: "
                               f"{exc}") from exc
        have = recorded_fps(out) or DEFAULT_STORE_FPS
        if have != fps:
            raise InteropError(f"store {str(out)!r} holds {have} fps data but the dataset is "
                               f"{fps} fps; import into a new store")
        return store
    store = EpisodeStore.create(out)
    record_fps(out, fps)
    return store


class _EpisodeReader:
    """Reads one LeRobot episode as (store steps, store meta)."""

    def __init__(self, ds: Any, cameras: dict[str, str]) -> None:
        self.ds, self.cameras = ds, cameras
        features = ds.meta.features
        self.step_keys = {k: f for k, f in STEP_FEATURES.items() if f in features}
        self.meta_keys = {k: f for k, f in META_FEATURES.items() if f in features}
        self.success_feature = "next.success" if "next.success" in features else None
        image_cols = [f for f in cameras if features[f]["dtype"] == "image"]
        columns = ["episode_index", "frame_index", "timestamp", "task_index",
                   *self.step_keys.values(), *self.meta_keys.values()]
        if self.success_feature:
            columns.append(self.success_feature)
        # Arrow, not datasets' numpy format: that one turns float64 columns into float32.
        self.table = ds.hf_dataset.with_format("arrow", columns=columns)
        self.images = ds.hf_dataset.with_format(None, columns=image_cols)
        self.episode_of_row = np.asarray(self.table["episode_index"].to_numpy()).reshape(-1)
        self.tasks = {int(i): str(t) for t, i in ds.meta.tasks["task_index"].items()}
        self.tolerance_s = 0.4 / ds.fps

    def read(self, ep: int) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        rows = np.flatnonzero(self.episode_of_row == ep)
        if len(rows) == 0:
            raise VideoDecodeError(f"episode {ep} has no rows in the data files")
        batch = self.table[rows.tolist()]
        col = {name: _to_numpy(batch.column(name), self.ds.meta.features[name]["dtype"])
               for name in batch.column_names}
        order = np.argsort(col["frame_index"].reshape(-1), kind="stable")
        col = {name: values[order] for name, values in col.items()}
        steps: dict[str, np.ndarray] = {}
        for key, feature in self.step_keys.items():
            value = col[feature]
            steps[key] = value.reshape(len(value)) if key in _SCALAR_KEYS else value
        for feature, key in self.cameras.items():
            steps[key] = self._images(ep, feature, rows[order], col["timestamp"])
        meta: dict[str, Any] = {"instruction": self.tasks[int(col["task_index"].reshape(-1)[0])]}
        for key, feature in self.meta_keys.items():
            value = col[feature].reshape(-1)[0]
            meta[key] = {"str": str, "bool": bool, "int64": int}[META_FIELDS[key][0]](value)
        if self.success_feature and "success" not in meta:
            meta["success"] = bool(np.any(col[self.success_feature]))
        return steps, meta

    def _images(self, ep: int, feature: str, rows: np.ndarray,
                timestamps: np.ndarray) -> np.ndarray:
        if self.ds.meta.features[feature]["dtype"] == "image":  # PNGs, decoded by datasets
            frames = np.stack([np.asarray(img) for img in self.images[rows.tolist()][feature]])
            if frames.shape[-1] != 3 and frames.shape[1] == 3:
                frames = frames.transpose(0, 2, 3, 1)
            return np.ascontiguousarray(frames, dtype=np.uint8)
        episode = self.ds.meta.episodes[ep]
        path = self.ds.root / self.ds.meta.get_video_file_path(ep, feature)
        start = float(episode[f"videos/{feature}/from_timestamp"])
        return decode_frames(path, start + timestamps.reshape(-1).astype(np.float64),
                             self.tolerance_s)


def _to_numpy(column: Any, dtype: str) -> np.ndarray:
    """A parquet column as a numpy array of the feature's dtype (strings stay str)."""
    values = column.to_pylist()
    return np.asarray(values) if dtype == "string" else np.asarray(values, dtype=dtype)
