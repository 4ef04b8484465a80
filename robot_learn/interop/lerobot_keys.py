"""How our episode store and a LeRobotDataset v3 name the same things, plus the
pieces both directions share: the lazy `lerobot` import, errors and the fps record."""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType

import zarr
from zarr.storage import LocalStore

CODEBASE_VERSION = "v3.0"  # the LeRobotDataset format we read and write

# Per-step store key <-> LeRobot feature (images handled by camera_feature/camera_key).
STEP_FEATURES: dict[str, str] = {
    "state": "observation.state",
    "env_state": "observation.environment_state",
    "action": "action",
    "reward": "next.reward",
    "policy_action": "policy_action",
    "intervention": "intervention",
    "progress": "progress",
    "phase": "phase",
    "timestamp": "wall_time",  # our wall-clock seconds; LeRobot's `timestamp` is time in episode
}
# Per-episode meta field <-> per-frame LeRobot feature (constant over the episode).
# `instruction` is LeRobot's own per-frame `task`, so our `task` gets another name.
META_FEATURES: dict[str, str] = {
    "task": "task_name",
    "success": "success",
    "seed": "seed",
    "source": "source",
    "round": "round",
    "policy_id": "policy_id",
    "operator": "operator",
    "created": "created",
}
IMAGE_PREFIX = "observation.images."
_CAMERA_OK = re.compile(r"[^A-Za-z0-9_\-]")
# Root-group attribute of our store that records the frame rate of imported data.
FPS_ATTR = "fps"
DEFAULT_STORE_FPS = 10  # a store without a recorded rate holds 10 Hz sim/robot data
INSTALL_HINT = (
    "lerobot needs torch<2.11 and cannot share the main .venv; build its own venv with "
    "`make .venv-lerobot/.installed` (see docs/interop.md) and run "
    "`.venv-lerobot/bin/robot-learn import-lerobot ...` / `export-lerobot ...` there")


class InteropError(ValueError):
    """Bad input for a LeRobot import or export (the message says what to do)."""


def require_lerobot() -> ModuleType:
    """Import `lerobot.datasets.lerobot_dataset`, or raise InteropError saying how to install it."""
    try:
        from lerobot.datasets import lerobot_dataset
    except ImportError as exc:
        raise InteropError(f"the `lerobot` package is not importable ({exc}); "
                           f"{INSTALL_HINT}") from exc
    return lerobot_dataset


def camera_feature(camera: str) -> str:
    """LeRobot feature name for our camera `camera` (`images/<camera>` in the store)."""
    return IMAGE_PREFIX + camera


def camera_name(feature: str) -> str:
    """Our camera name for a LeRobot image/video feature: `observation.images.front` -> `front`,
    `observation.image` -> `image`; other characters a store key forbids become `_`."""
    if feature.startswith(IMAGE_PREFIX):
        name = feature[len(IMAGE_PREFIX):]
    else:
        name = feature.removeprefix("observation.")
    return _CAMERA_OK.sub("_", name)


def check_codebase_version(version: str, where: str) -> None:
    """InteropError unless `version` is a v3.x LeRobotDataset codebase version."""
    major = version.lstrip("v").split(".")[0]
    if major != CODEBASE_VERSION[1]:
        raise InteropError(
            f"{where} is a LeRobotDataset of codebase_version {version!r}; robot-learn reads and "
            f"writes {CODEBASE_VERSION} only. Convert it first with lerobot's converter, e.g. "
            "`python -m lerobot.datasets.v30.convert_dataset_v21_to_v30 --repo-id=<repo_id>` "
            "(for v2.1; older versions convert to v2.1 first), then import the converted copy")


def recorded_fps(store_path: str | Path) -> int | None:
    """The frame rate recorded in a store by an earlier import, or None."""
    group = zarr.open_group(store=LocalStore(Path(store_path), read_only=True), mode="r")
    fps = group.attrs.get(FPS_ATTR)
    return None if fps is None else int(fps)


def record_fps(store_path: str | Path, fps: int) -> None:
    """Record the frame rate of a store's episodes as a root-group attribute."""
    group = zarr.open_group(store=LocalStore(Path(store_path)), mode="r+")
    group.attrs[FPS_ATTR] = int(fps)
