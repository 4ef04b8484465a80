"""OpenCV cameras with capture timestamps. `cv2` is imported lazily, only when a
camera connects, so the drivers work without OpenCV installed."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from robot_learn.hardware.errors import SDKMissingError


class CameraError(RuntimeError):
    """A camera could not be opened or stopped delivering frames."""


@dataclass
class CameraConfig:
    """`source`: device index (0, 1, ...), device path, or a video file."""

    source: int | str
    width: int | None = None
    height: int | None = None
    fps: float | None = None


class OpenCVCamera:
    """Reads frames through `cv2.VideoCapture`; a background thread keeps the latest
    frame so `read_latest()` never blocks the control loop."""

    def __init__(self, config: CameraConfig) -> None:
        self.config = config
        self._cap: Any = None
        self._lock = threading.Lock()
        self._latest: tuple[np.ndarray, float] | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def connect(self) -> None:
        try:
            import cv2
        except ImportError as exc:
            raise SDKMissingError("OpenCV is not installed; pip install opencv-python-headless") from exc
        self._cv2 = cv2
        self._cap = cv2.VideoCapture(self.config.source)
        if not self._cap.isOpened():
            raise CameraError(f"cannot open camera source {self.config.source!r}")
        if self.config.width:
            self._cap.set(cv2.CAP_PROP_FRAME_WIDTH, self.config.width)
        if self.config.height:
            self._cap.set(cv2.CAP_PROP_FRAME_HEIGHT, self.config.height)
        if self.config.fps:
            self._cap.set(cv2.CAP_PROP_FPS, self.config.fps)

    def read(self) -> tuple[np.ndarray, float]:
        """Grab one frame now: (RGB uint8 HxWx3, monotonic timestamp of the capture)."""
        if self._cap is None:
            raise CameraError(f"camera {self.config.source!r} is not connected")
        ok, frame = self._cap.read()
        stamp = time.monotonic()
        if not ok or frame is None:
            raise CameraError(f"camera {self.config.source!r} returned no frame")
        frame = self._cv2.cvtColor(frame, self._cv2.COLOR_BGR2RGB)
        if self.config.width and self.config.height and frame.shape[:2] != (self.config.height, self.config.width):
            frame = self._cv2.resize(frame, (self.config.width, self.config.height))
        return np.ascontiguousarray(frame, dtype=np.uint8), stamp

    def start_background(self) -> None:
        """Capture continuously in a thread; `read_latest()` returns the newest frame."""
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="camera", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                item = self.read()
            except CameraError:
                time.sleep(0.01)
                continue
            with self._lock:
                self._latest = item
            if self.config.fps:
                time.sleep(1.0 / self.config.fps)

    def read_latest(self, timeout_s: float = 1.0) -> tuple[np.ndarray, float]:
        """Newest background frame (waits up to `timeout_s` for the first one)."""
        if self._thread is None:
            return self.read()
        deadline = time.monotonic() + timeout_s
        while True:
            with self._lock:
                if self._latest is not None:
                    return self._latest
            if time.monotonic() > deadline:
                raise CameraError(f"camera {self.config.source!r}: no frame within {timeout_s:g} s")
            time.sleep(0.002)

    def disconnect(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
            self._thread = None
        if self._cap is not None:
            self._cap.release()
            self._cap = None
