"""Autoregressive imagination: a world model rolled forward on its own predictions.

A rollout keeps the last ``history`` frames and states; each step predicts the next
pair from them and the action, checks the imagined frame, and shifts it in. A frame
that is not finite, or has more than ``MAX_FAR_FRACTION`` of its pixel values more
than ``FRAME_SLACK`` units outside [0, 255], means the model has left the data it
knows: the rollout stops there. Any other frame is clipped to [0, 255] and used.
"""

from __future__ import annotations

import numpy as np
import torch

from robot_learn.world_models.modeling_world_model import VideoWorldModel

FRAME_SLACK = 64.0
"""Pixel units past [0, 255] that a value may stray and still count as in range (it is clipped)."""

MAX_FAR_FRACTION = 0.01
"""Fraction of a frame's pixel values (H x W x 3) allowed further than ``FRAME_SLACK`` out of range.

A lone extreme value is not a diverged model: the residual head overshoots at a few
sharp edges, and in the benchmarks' fidelity run (docs/benchmarks.md, "Video world
model") 25 of 31 rollouts of the trained default model had such a pixel, so a check on
the single most extreme value stopped most imagined episodes (with this fraction, none
of the 31 stop). A model that has left its data puts a large part of the frame out of
range, which this fraction still catches.
"""


def frame_problem(frame: torch.Tensor) -> str | None:
    """Why an imagined float frame (pixel units) cannot be used, or None if it can.

    NaN or Inf anywhere is always a problem; values out of [0, 255] are one only when
    more than ``MAX_FAR_FRACTION`` of them are further out than ``FRAME_SLACK``.
    """
    if not bool(torch.isfinite(frame).all()):
        return "imagined frame has NaN or Inf pixels"
    far = float(((frame < -FRAME_SLACK) | (frame > 255.0 + FRAME_SLACK)).float().mean())
    if far > MAX_FAR_FRACTION:
        return (f"imagined frame out of range: {far:.1%} of pixel values are more than {FRAME_SLACK:.0f} "
                f"units outside [0, 255] (allowed {MAX_FAR_FRACTION:.0%}); the frame spans "
                f"[{float(frame.min()):.1f}, {float(frame.max()):.1f}]")
    return None


def to_uint8(frame: torch.Tensor) -> torch.Tensor:
    """A checked float frame (pixel units) as uint8, clipped to [0, 255]."""
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
