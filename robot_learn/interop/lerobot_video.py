"""Decode one episode's frames from a LeRobotDataset v3 video file with PyAV.

A v3 video file holds many episodes back to back; an episode's frames sit at
`from_timestamp + timestamp` of its parquet rows. lerobot 0.4's own CPU decoder
goes through `torchvision.io.VideoReader`, which torchvision 0.29 no longer has,
so we seek and decode the episode's span with PyAV (a lerobot dependency) and
match frames to the wanted timestamps the way lerobot does: nearest frame,
within a tolerance.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


class VideoDecodeError(RuntimeError):
    """A video file is missing, unreadable, or lacks frames at the wanted timestamps."""


def decode_frames(path: str | Path, timestamps: np.ndarray, tolerance_s: float) -> np.ndarray:
    """Frames of `path` nearest to each of `timestamps` (seconds, ascending) as uint8 [T, H, W, 3].

    Raises VideoDecodeError when the file cannot be decoded or a timestamp has no
    frame within `tolerance_s`."""
    import av

    path = Path(path)
    if not path.is_file():
        raise VideoDecodeError(f"video file {str(path)!r} does not exist")
    want = np.asarray(timestamps, dtype=np.float64)
    times: list[float] = []
    frames: list[np.ndarray] = []
    try:
        with av.open(str(path)) as container:
            stream = container.streams.video[0]
            start = max(float(want[0]) - tolerance_s, 0.0)
            container.seek(int(start / stream.time_base), stream=stream, backward=True)
            for frame in container.decode(stream):
                t = float(frame.pts * stream.time_base)
                if t < want[0] - tolerance_s:
                    continue
                if t > want[-1] + tolerance_s:
                    break
                times.append(t)
                frames.append(frame.to_ndarray(format="rgb24"))
    except (av.error.FFmpegError, IndexError, ValueError) as exc:
        raise VideoDecodeError(f"cannot decode {str(path)!r}: {exc}") from exc
    if not frames:
        raise VideoDecodeError(f"{str(path)!r} has no frames between {want[0]:.3f} s "
                               f"and {want[-1]:.3f} s")
    got = np.asarray(times)
    nearest = np.abs(want[:, None] - got[None, :]).argmin(axis=1)
    error = np.abs(got[nearest] - want)
    if (error > tolerance_s).any():
        bad = int(np.argmax(error > tolerance_s))
        raise VideoDecodeError(
            f"{str(path)!r} has no frame within {tolerance_s:.4f} s of t={want[bad]:.4f} s "
            f"(nearest {got[nearest[bad]]:.4f} s)")
    return np.stack([frames[i] for i in nearest])
