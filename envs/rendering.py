"""Offscreen camera images through mujoco.Renderer (EGL when MUJOCO_GL=egl)."""

from __future__ import annotations

import mujoco
import numpy as np

CAMERA_NAMES = ("front", "wrist")


class CameraRenderer:
    """Renders named cameras of one model at one resolution.

    Shadows and reflections are switched off: they cost a pass each and carry
    no information a policy needs.  The GL context is created on first use, so
    an env without cameras never touches OpenGL.
    """

    def __init__(self, model: mujoco.MjModel, height: int, width: int):
        self.model = model
        self.height, self.width = height, width
        self._renderer: mujoco.Renderer | None = None

    def _get(self) -> mujoco.Renderer:
        if self._renderer is None:
            self._renderer = mujoco.Renderer(self.model, self.height, self.width)
            flags = self._renderer.scene.flags
            flags[mujoco.mjtRndFlag.mjRND_SHADOW] = False
            flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = False
        return self._renderer

    def render(self, data: mujoco.MjData, cameras: tuple[str, ...]) -> dict[str, np.ndarray]:
        """One uint8 [H, W, 3] image per camera name."""
        renderer = self._get()
        images = {}
        for cam in cameras:
            renderer.update_scene(data, camera=cam)
            images[cam] = renderer.render()  # a fresh array each call
        return images

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None


def check_cameras(cameras: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """Validate camera names; ValueError names the bad one and the valid ones."""
    cams = tuple(cameras)
    for cam in cams:
        if cam not in CAMERA_NAMES:
            raise ValueError(f"unknown camera {cam!r}; valid cameras: {', '.join(CAMERA_NAMES)}")
    if len(set(cams)) != len(cams):
        raise ValueError(f"duplicate camera in {cams!r}")
    return cams
