"""Combines the state, camera and instruction encoders into per-step features."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import nn

from robot_learn.policies.state_encoder import StateEncoder
from robot_learn.policies.text_encoder import TextEncoder, batch_instructions
from robot_learn.policies.vision_encoder import VisionEncoder


class ObservationEncoder(nn.Module):
    """``obs`` -> (``[B, To, step_dim]`` per-step features, ``[B, text_dim]`` or None).

    Per step: the state MLP's output concatenated with one feature vector per camera
    (cameras in ``camera_names`` order). The instruction, which does not change within
    a window, is encoded once per sample; with ``vision_film`` it also FiLM-modulates
    the camera encoders.
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
        vision_film: bool = False,
        vision_pool: str = "spatial_softmax",
        vision_stem_stride: int = 2,
    ) -> None:
        super().__init__()
        if not state_dims and not camera_names:
            raise ValueError("the observation encoder needs low-dim keys or cameras")
        if vision_film and (text_encoder is None or not camera_names):
            raise ValueError("vision_film needs cameras and a text encoder (it conditions the cameras on the instruction)")
        film_dim = text_encoder.out_dim if vision_film and text_encoder is not None else 0
        self.state_encoder = StateEncoder(state_dims, state_hidden_dims, state_feature_dim, stats) if state_dims else None
        self.camera_names = tuple(camera_names)
        self.share_vision_encoder = bool(share_vision_encoder)

        def vision() -> VisionEncoder:
            return VisionEncoder(image_size, crop_size, vision_channels, vision_blocks_per_stage, num_keypoints,
                                 vision_feature_dim, film_dim, vision_pool, vision_stem_stride)

        names = ("shared",) if share_vision_encoder and self.camera_names else self.camera_names
        self.vision_encoders = nn.ModuleDict({name: vision() for name in names})
        self.text_encoder = text_encoder
        self.step_dim = (state_feature_dim if state_dims else 0) + len(self.camera_names) * vision_feature_dim
        self.text_dim = text_encoder.out_dim if text_encoder is not None else 0
        self.vision_film = bool(film_dim)

    def forward(self, obs: Mapping[str, Any], compiled: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Per-step features ``[B, To, step_dim]`` and the text features (or None); ``compiled``
        runs the image encoders through ``torch.compile`` in eval mode (``VisionEncoder.compiled_forward``)."""
        compiled = compiled and not self.training
        parts = []
        if self.state_encoder is not None:
            parts.append(self.state_encoder(obs))
        text_features = self._encode_text(obs) if self.text_encoder is not None else None
        if self.camera_names:
            images = obs.get("images")
            if not isinstance(images, Mapping):
                raise ValueError(f"observation needs 'images' with cameras {list(self.camera_names)}")
            for camera in self.camera_names:
                if camera not in images:
                    raise ValueError(f"observation lacks camera '{camera}'; it has {sorted(images)}")
                frames = images[camera]  # [B, To, H, W, 3] uint8
                encoder = self.vision_encoders["shared" if self.share_vision_encoder else camera]
                encoder = encoder.compiled_forward if compiled else encoder
                cond = text_features.repeat_interleave(frames.shape[1], dim=0) if self.vision_film else None
                features = encoder(frames.reshape(-1, *frames.shape[2:]), cond)
                parts.append(features.reshape(frames.shape[0], frames.shape[1], -1))
        return torch.cat(parts, dim=-1), text_features

    def _encode_text(self, obs: Mapping[str, Any]) -> torch.Tensor:
        return self.text_encoder(batch_instructions(obs, _batch_size(obs)))


def _batch_size(obs: Mapping[str, Any]) -> int:
    """B of an observation batch, from its first array (low-dim key or camera)."""
    for key, value in obs.items():
        if key == "images" and isinstance(value, Mapping):
            for frames in value.values():
                return int(frames.shape[0])
        elif key != "instruction" and hasattr(value, "shape"):
            return int(value.shape[0])
    raise ValueError(f"cannot tell the batch size of an observation with keys {sorted(obs)}")
