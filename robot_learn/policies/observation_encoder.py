"""Combines the state, camera and instruction encoders into per-step features."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import nn

from robot_learn.policies.state_encoder import StateEncoder
from robot_learn.policies.text_encoder import TextEncoder
from robot_learn.policies.vision_encoder import VisionEncoder


class ObservationEncoder(nn.Module):
    """``obs`` -> (``[B, To, step_dim]`` per-step features, ``[B, text_dim]`` or None).

    Per step: the state MLP's output concatenated with one feature vector per camera
    (cameras in ``camera_names`` order). The instruction, which does not change within
    a window, is encoded once per sample.
    """

    def __init__(
        self,
        state_dims: Mapping[str, int],
        camera_names: Sequence[str] = (),
        text_encoder: TextEncoder | None = None,
        stats: Mapping[str, Mapping[str, Any]] | None = None,
        state_hidden_dims: Sequence[int] = (128,),
        state_feature_dim: int = 64,
        image_size: int = 96,
        crop_size: int = 84,
        vision_channels: Sequence[int] = (16, 32, 64, 128),
        vision_blocks_per_stage: int = 2,
        num_keypoints: int = 32,
        vision_feature_dim: int = 64,
        share_vision_encoder: bool = False,
    ) -> None:
        super().__init__()
        if not state_dims and not camera_names:
            raise ValueError("the observation encoder needs low-dim keys or cameras")
        self.state_encoder = StateEncoder(state_dims, state_hidden_dims, state_feature_dim, stats) if state_dims else None
        self.camera_names = tuple(camera_names)
        self.share_vision_encoder = bool(share_vision_encoder)

        def vision() -> VisionEncoder:
            return VisionEncoder(image_size, crop_size, vision_channels, vision_blocks_per_stage, num_keypoints, vision_feature_dim)

        names = ("shared",) if share_vision_encoder and self.camera_names else self.camera_names
        self.vision_encoders = nn.ModuleDict({name: vision() for name in names})
        self.text_encoder = text_encoder
        self.step_dim = (state_feature_dim if state_dims else 0) + len(self.camera_names) * vision_feature_dim
        self.text_dim = text_encoder.out_dim if text_encoder is not None else 0

    def forward(self, obs: Mapping[str, Any]) -> tuple[torch.Tensor, torch.Tensor | None]:
        parts = []
        if self.state_encoder is not None:
            parts.append(self.state_encoder(obs))
        if self.camera_names:
            images = obs.get("images")
            if not isinstance(images, Mapping):
                raise ValueError(f"observation needs 'images' with cameras {list(self.camera_names)}")
            for camera in self.camera_names:
                if camera not in images:
                    raise ValueError(f"observation lacks camera '{camera}'; it has {sorted(images)}")
                frames = images[camera]  # [B, To, H, W, 3] uint8
                encoder = self.vision_encoders["shared" if self.share_vision_encoder else camera]
                features = encoder(frames.reshape(-1, *frames.shape[2:]))
                parts.append(features.reshape(frames.shape[0], frames.shape[1], -1))
        step_features = torch.cat(parts, dim=-1)

        text_features = None
        if self.text_encoder is not None:
            instructions = obs.get("instruction")
            if instructions is None:
                raise ValueError("this policy is language-conditioned: the observation needs 'instruction' (list of B strings)")
            if isinstance(instructions, str):
                instructions = [instructions] * step_features.shape[0]
            if len(instructions) != step_features.shape[0]:
                raise ValueError(f"got {len(instructions)} instructions for a batch of {step_features.shape[0]}")
            text_features = self.text_encoder(list(instructions))
        return step_features, text_features
