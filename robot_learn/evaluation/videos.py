"""Episode videos: tile camera frames side by side and write mp4 files."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import numpy as np


def tile_cameras(images: Mapping[str, np.ndarray],
                 order: Sequence[str] | None = None) -> np.ndarray:
    """Place one uint8 ``[H, W, 3]`` frame per camera side by side.

    Frames of different heights are bottom-padded with black so they can share
    one row; ``order`` picks and orders the cameras (default: ``images`` order).
    """
    names = list(order) if order is not None else list(images)
    if not names:
        raise ValueError("tile_cameras needs at least one camera image")
    missing = [n for n in names if n not in images]
    if missing:
        raise ValueError(f"unknown camera(s) {missing}; available: {', '.join(images)}")
    frames = [np.asarray(images[n]) for n in names]
    height = max(f.shape[0] for f in frames)
    padded = []
    for f in frames:
        if f.shape[0] < height:
            pad = np.zeros((height - f.shape[0],) + f.shape[1:], dtype=f.dtype)
            f = np.concatenate([f, pad], axis=0)
        padded.append(f)
    return np.concatenate(padded, axis=1)


def write_video(frames: Sequence[np.ndarray], path: str | Path, fps: int = 10) -> Path:
    """Write uint8 ``[H, W, 3]`` frames to an mp4 (H.264 via imageio-ffmpeg).

    Frames are padded to even sizes, which yuv420p requires; ``macro_block_size=1``
    keeps imageio from rescaling them.
    """
    import imageio.v2 as imageio  # imported here: ffmpeg start-up is not free

    if len(frames) == 0:
        raise ValueError(f"no frames to write to {path}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    h, w = frames[0].shape[:2]
    ph, pw = h + h % 2, w + w % 2
    writer = imageio.get_writer(str(path), fps=fps, codec="libx264",
                                macro_block_size=1, pixelformat="yuv420p",
                                ffmpeg_log_level="error")
    try:
        for frame in frames:
            frame = np.asarray(frame, dtype=np.uint8)
            if frame.shape[:2] != (ph, pw):
                canvas = np.zeros((ph, pw, 3), dtype=np.uint8)
                canvas[: frame.shape[0], : frame.shape[1]] = frame[:ph, :pw]
                frame = canvas
            writer.append_data(frame)
    finally:
        writer.close()
    return path
