"""Export an episode store as a LeRobotDataset v3, written by the real `lerobot` package.

Per-step keys map to LeRobot's names (`state` -> `observation.state`, `images/front`
-> `observation.images.front`, ...); our HITL fields (`intervention`,
`policy_action`, ...) are extra features, and the per-episode metadata (`source`,
`round`, `success`, ...) become per-frame features constant over an episode, so
LeRobot users see who drove each step and which round it came from. The
instruction is LeRobot's per-frame `task`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from robot_learn.data import EpisodeStore
from robot_learn.data.schema import META_FIELDS
from robot_learn.interop.lerobot_keys import (
    DEFAULT_STORE_FPS, META_FEATURES, STEP_FEATURES, InteropError, camera_feature,
    recorded_fps, require_lerobot,
)

_META_DTYPES = {"str": "string", "bool": "bool", "int64": "int64"}


@dataclass
class ExportSummary:
    """What `export_lerobot` wrote."""

    out: Path
    repo_id: str
    fps: int
    episodes: int
    frames: int
    features: list[str]

    def __str__(self) -> str:
        return (f"wrote LeRobotDataset v3 {self.repo_id!r} to {self.out}: {self.episodes} "
                f"episodes, {self.frames} frames, {self.fps} fps\n"
                f"features: {', '.join(self.features)}")


def export_lerobot(store_path: str | Path, out_root: str | Path, *, repo_id: str | None = None,
                   fps: int | None = None, cameras: Sequence[str] | None = None,
                   use_videos: bool = True, vcodec: str = "libsvtav1",
                   robot_type: str | None = None) -> ExportSummary:
    """Write every episode of the store at `store_path` as a new LeRobotDataset at `out_root`.

    `fps` defaults to the rate recorded in the store (10 when none is); giving a
    different one is an error. `cameras` selects store cameras (default all);
    `use_videos=False` stores PNG frames instead of encoded video."""
    lerobot_dataset = require_lerobot()
    from lerobot.datasets.video_utils import VALID_VIDEO_CODECS

    if use_videos and vcodec not in VALID_VIDEO_CODECS:
        raise InteropError(f"unknown vcodec {vcodec!r}; valid codecs: "
                           f"{', '.join(sorted(VALID_VIDEO_CODECS))}")
    store = EpisodeStore.open(store_path, mode="r")
    out_root = Path(out_root)
    if out_root.exists():
        raise InteropError(f"--out {str(out_root)!r} already exists; LeRobot writes a new "
                           "dataset root, choose a path that does not exist")
    if store.num_episodes == 0:
        raise InteropError(f"store {str(store_path)!r} has no episodes to export")
    have = recorded_fps(store_path)
    if fps is not None and have is not None and int(fps) != have:
        raise InteropError(f"store {str(store_path)!r} holds {have} fps data; exporting it "
                           f"as {fps} fps would retime it. Leave fps unset or pass {have}")
    fps = int(fps or have or DEFAULT_STORE_FPS)
    keys = _step_keys(store, cameras, str(store_path))
    features = _features(store, keys, use_videos)
    repo_id = repo_id or f"robot_learn/{Path(store_path).resolve().name}"
    ds = lerobot_dataset.LeRobotDataset.create(
        repo_id, fps, features, root=out_root, robot_type=robot_type, use_videos=use_videos,
        vcodec=vcodec, video_backend="pyav")
    try:
        for index in range(store.num_episodes):
            _add_episode(ds, store.episode(index), keys)
            ds.save_episode(parallel_encoding=False)
    finally:
        ds.finalize()
    return ExportSummary(out_root, repo_id, fps, store.num_episodes, store.num_frames,
                         list(features))


def _step_keys(store: EpisodeStore, cameras: Sequence[str] | None, where: str) -> dict[str, str]:
    """Store key -> LeRobot feature for every exported per-step key."""
    store_cams = [k.removeprefix("images/") for k in store.keys if k.startswith("images/")]
    for cam in cameras or ():
        if cam not in store_cams:
            raise InteropError(f"camera {cam!r} is not in store {where}; its cameras: "
                               f"{', '.join(store_cams) or '(none)'}")
    chosen = store_cams if cameras is None else list(cameras)
    keys = {k: STEP_FEATURES[k] for k in store.keys if k in STEP_FEATURES}
    keys.update({f"images/{cam}": camera_feature(cam) for cam in chosen})
    return keys


def _features(store: EpisodeStore, keys: dict[str, str], use_videos: bool) -> dict[str, dict]:
    schema = store.schema
    features: dict[str, dict] = {}
    for key, feature in keys.items():
        spec = schema[key]
        if key.startswith("images/"):
            features[feature] = {"dtype": "video" if use_videos else "image",
                                 "shape": tuple(spec["shape"]),
                                 "names": ["height", "width", "channels"]}
        else:
            features[feature] = {"dtype": spec["dtype"], "shape": tuple(spec["shape"]) or (1,),
                                 "names": None}
    for field_name, feature in META_FEATURES.items():
        features[feature] = {"dtype": _META_DTYPES[META_FIELDS[field_name][0]], "shape": (1,),
                             "names": None}
    return features


def _add_episode(ds: Any, episode: dict[str, dict[str, Any]], keys: dict[str, str]) -> None:
    steps, meta = episode["steps"], episode["meta"]
    constant = {}
    for field_name, feature in META_FEATURES.items():
        value = meta[field_name]
        constant[feature] = value if isinstance(value, str) else np.array([value])
    for t in range(len(steps["action"])):
        frame: dict[str, Any] = {"task": meta["instruction"], **constant}
        for key, feature in keys.items():
            value = steps[key][t]
            frame[feature] = value if value.ndim else value.reshape(1)
        ds.add_frame(frame)
