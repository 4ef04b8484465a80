"""Observation -> prefix tokens, in order: image patches per camera, instruction words,
low-dim keys (one token per observation step and key, or ``state_tokens[key]`` tokens
when a key is a list of like items, e.g. the object slots of ``objects``: each slot
becomes a token through one shared projection, so attention can match the slot whose
colour the instruction names).

Images: uint8 ``[B, To, H, W, 3]``, random crop in training and centre crop in eval,
then a conv stem (stride-2 convs) and a patch conv (kernel = stride = ``patch_size``).
Words use the vocabulary convention of :class:`~robot_learn.policies.VocabTextEncoder`
(0 pad, 1 unknown, then the vocabulary), so an unseen word becomes the unknown token.
Low-dim keys are min-max normalised with the shared :class:`MinMaxNormalizer`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import nn

from robot_learn.policies.image_crop import CroppingImageModule
from robot_learn.policies.normalizer import MinMaxNormalizer
from robot_learn.policies.text_encoder import batch_instructions, split_words


def _conv_out(size: int, kernel: int, stride: int, padding: int) -> int:
    return (size + 2 * padding - kernel) // stride + 1


class PatchStem(CroppingImageModule):
    """uint8 ``[N, H, W, 3]`` -> patch tokens ``[N, P, dim]``."""

    def __init__(self, image_size: int, crop_size: int, channels: Sequence[int], patch_size: int, dim: int) -> None:
        super().__init__(image_size, crop_size)
        layers: list[nn.Module] = []
        width, side = 3, self.crop_size
        for out in channels:
            layers += [nn.Conv2d(width, out, 3, stride=2, padding=1), nn.GroupNorm(8 if out % 8 == 0 else 1, out), nn.GELU()]
            width, side = out, _conv_out(side, 3, 2, 1)
        layers.append(nn.Conv2d(width, dim, patch_size, stride=patch_size))
        side = _conv_out(side, patch_size, patch_size, 0)
        if side < 1:
            raise ValueError(f"crop_size {crop_size} is too small for {len(channels)} stride-2 convs and patch_size {patch_size}")
        self.net = nn.Sequential(*layers)
        self.num_patches = side * side

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.net(self.image_input(images)).flatten(2).transpose(1, 2)


class ObservationTokens(nn.Module):
    """``obs`` -> (prefix tokens ``[B, P, dim]``, pad mask ``[B, P]`` True at padding)."""

    def __init__(
        self,
        dim: int,
        obs_horizon: int,
        state_dims: Mapping[str, int],
        camera_names: Sequence[str] = (),
        vocab: Sequence[str] | None = None,
        text_max_len: int = 16,
        image_size: int = 96,
        crop_size: int = 84,
        stem_channels: Sequence[int] = (16, 32),
        patch_size: int = 3,
        stats: Mapping[str, Mapping[str, Any]] | None = None,
        state_tokens: Mapping[str, int] | None = None,
    ) -> None:
        super().__init__()
        self.state_tokens = {key: int((state_tokens or {}).get(key, 1)) for key in state_dims}
        unknown = sorted(set(state_tokens or {}) - set(state_dims))
        if unknown:
            raise ValueError(f"state_tokens names keys {unknown} that are not in state_dims {sorted(state_dims)}")
        for key, n in self.state_tokens.items():
            if n < 1 or int(state_dims[key]) % n:
                raise ValueError(f"state_tokens[{key!r}]={n} must be >= 1 and divide its size {state_dims[key]}")
        self.obs_horizon = int(obs_horizon)
        self.camera_names = tuple(camera_names)
        self.state_keys = tuple(state_dims)
        if stats is not None:
            missing = [key for key in self.state_keys if key not in stats]
            if missing:
                raise ValueError(f"stats lack observation keys {missing}; stats have {sorted(stats)}")
        # Images: one stem shared by the cameras; a learned position per (camera, step, patch).
        self.stem = None
        if self.camera_names:
            self.stem = PatchStem(image_size, crop_size, stem_channels, patch_size, dim)
            n = len(self.camera_names) * self.obs_horizon * self.stem.num_patches
            self.image_position = nn.Parameter(torch.randn(n, dim) * 0.02)
        # Words.
        self.word_ids = None
        if vocab is not None:
            self.word_ids = {word: index + 2 for index, word in enumerate(vocab)}
            self.text_max_len = int(text_max_len)
            self.word_embedding = nn.Embedding(len(vocab) + 2, dim, padding_idx=0)
            self.word_position = nn.Parameter(torch.randn(self.text_max_len, dim) * 0.02)
        # Low-dim keys: a linear token per key (or per item of a key) and step.
        self.normalizers = nn.ModuleDict(
            {key: MinMaxNormalizer(d, None if stats is None else stats[key], name=key) for key, d in state_dims.items()}
        )
        self.state_projections = nn.ModuleDict(
            {key: nn.Linear(int(d) // self.state_tokens[key], dim) for key, d in state_dims.items()})
        if self.state_keys:
            n = sum(self.state_tokens.values()) * self.obs_horizon
            self.state_position = nn.Parameter(torch.randn(n, dim) * 0.02)

    def state_token_slice(self, key: str, prefix_len: int) -> slice:
        """Where ``key``'s tokens (all obs steps) sit in a prefix of ``prefix_len`` tokens;
        low-dim tokens come last, in ``state_keys`` order."""
        per_step = {k: self.state_tokens[k] * self.obs_horizon for k in self.state_keys}
        start = prefix_len - sum(per_step.values())
        for k in self.state_keys:
            if k == key:
                return slice(start, start + per_step[k])
            start += per_step[k]
        raise KeyError(f"{key!r} is not a low-dim key of this policy; keys: {list(self.state_keys)}")

    def word_token_ids(self, text: str) -> list[int]:
        """Ids of ``text``'s words; unknown words -> 1; truncated; empty text -> one unknown token."""
        assert self.word_ids is not None
        return [self.word_ids.get(word, 1) for word in split_words(str(text))][: self.text_max_len] or [1]

    def forward(self, obs: Mapping[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
        parts: list[torch.Tensor] = []
        pads: list[torch.Tensor] = []
        batch = self._batch_size(obs)
        device = self.normalizers[self.state_keys[0]].centre.device if self.state_keys else self.image_position.device
        if self.stem is not None:
            images = obs.get("images")
            if not isinstance(images, Mapping):
                raise ValueError(f"observation needs 'images' with cameras {list(self.camera_names)}")
            per_camera = []
            for camera in self.camera_names:
                if camera not in images:
                    raise ValueError(f"observation lacks camera '{camera}'; it has {sorted(images)}")
                frames = self._with_horizon(images[camera], f"images/{camera}", 5)  # [B, To, H, W, 3]
                tokens = self.stem(frames.reshape(-1, *frames.shape[2:]))  # [B*To, P, D]
                per_camera.append(tokens.reshape(batch, -1, tokens.shape[-1]))
            tokens = torch.cat(per_camera, dim=1) + self.image_position
            parts.append(tokens)
            pads.append(torch.zeros(batch, tokens.shape[1], dtype=torch.bool, device=device))
        if self.word_ids is not None:
            rows = [self.word_token_ids(text) for text in batch_instructions(obs, batch)]
            length = max(len(row) for row in rows)
            ids = torch.zeros(batch, length, dtype=torch.long, device=device)
            for index, row in enumerate(rows):
                ids[index, : len(row)] = torch.tensor(row, device=device)
            parts.append(self.word_embedding(ids) + self.word_position[:length])
            pads.append(ids == 0)
        if self.state_keys:
            tokens = []
            for key in self.state_keys:
                if key not in obs:
                    raise ValueError(f"observation lacks low-dim key '{key}'; it has {sorted(obs)}")
                values = self.normalizers[key].normalize(self._with_horizon(obs[key], key, 3))
                items = values.reshape(batch, -1, values.shape[-1] // self.state_tokens[key])  # [B, To * n, d / n]
                tokens.append(self.state_projections[key](items))
            tokens = torch.cat(tokens, dim=1) + self.state_position
            parts.append(tokens)
            pads.append(torch.zeros(batch, tokens.shape[1], dtype=torch.bool, device=device))
        return torch.cat(parts, dim=1), torch.cat(pads, dim=1)

    def _with_horizon(self, value: torch.Tensor, key: str, ndim: int) -> torch.Tensor:
        if value.ndim != ndim or value.shape[1] != self.obs_horizon:
            raise ValueError(f"observation '{key}' must have obs_horizon={self.obs_horizon} steps ([B, To, ...]), "
                             f"got shape {tuple(value.shape)}")
        return value

    def _batch_size(self, obs: Mapping[str, Any]) -> int:
        for key in self.state_keys:
            if key in obs:
                return int(obs[key].shape[0])
        images = obs.get("images") or {}
        for camera in self.camera_names:
            if camera in images:
                return int(images[camera].shape[0])
        raise ValueError(f"observation has none of {list(self.state_keys) + list(self.camera_names)}")

