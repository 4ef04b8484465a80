"""Autoregressive imagination: a world model rolled forward on its own predictions.

A rollout keeps the last ``history`` frames and states; each step predicts the next
pair from them and the action, checks the imagined frame, and shifts it in. A frame
that is not finite, or strays more than ``FRAME_SLACK`` pixel units outside [0, 255],
means the model has left the data it knows: the rollout stops there.
"""

from __future__ import annotations

import numpy as np
import torch

from robot_learn.world_models.modeling_world_model import VideoWorldModel

FRAME_SLACK = 64.0  # pixel units past [0, 255] still clipped; further out is a diverged frame


class ImaginationError(ValueError):
    """An imagined frame is NaN/Inf or far outside the pixel range."""


def frame_problem(frame: torch.Tensor) -> str | None:
    """Why an imagined float frame (pixel units) cannot be used, or None if it can."""
    if not bool(torch.isfinite(frame).all()):
        return "imagined frame has NaN or Inf pixels"
    low, high = float(frame.min()), float(frame.max())
    if low < -FRAME_SLACK or high > 255.0 + FRAME_SLACK:
        return (f"imagined frame out of range: pixels span [{low:.1f}, {high:.1f}], "
                f"allowed [{-FRAME_SLACK:.0f}, {255 + FRAME_SLACK:.0f}]")
    return None


def to_uint8(frame: torch.Tensor) -> torch.Tensor:
    """A checked float frame (pixel units) as uint8."""
    return frame.round().clamp(0, 255).to(torch.uint8)


class Imagination:
    """Batched autoregressive state of ``B`` imagined rollouts.

    ``frames`` uint8 ``[B, history, H, W, 3]`` and ``states`` ``[B, history, D]`` are the
    real (or previously imagined) history the rollouts start from.
    """

    def __init__(self, model: VideoWorldModel, frames: torch.Tensor | np.ndarray,
                 states: torch.Tensor | np.ndarray, generator: torch.Generator | None = None) -> None:
        self.model = model
        device = model.device
        self.frames = torch.as_tensor(np.asarray(frames), device=device)
        self.states = torch.as_tensor(np.asarray(states), dtype=torch.float32, device=device)
        self.generator = generator

    def step(self, action: torch.Tensor | np.ndarray) -> tuple[torch.Tensor, torch.Tensor, list[str | None]]:
        """Advance every rollout by ``action [B, A]``; returns the new uint8 frames
        ``[B, H, W, 3]``, states ``[B, D]`` and, per rollout, a problem or None."""
        action = torch.as_tensor(np.asarray(action), dtype=torch.float32, device=self.model.device)
        out = self.model.predict_next(self.frames, self.states, action, generator=self.generator)
        problems = [frame_problem(f) for f in out["frame"]]
        frame = to_uint8(torch.nan_to_num(out["frame"]))
        state = torch.nan_to_num(out["state"])
        self.frames = torch.cat([self.frames[:, 1:], frame[:, None]], dim=1)
        self.states = torch.cat([self.states[:, 1:], state[:, None]], dim=1)
        return frame, state, problems
