"""``VideoWorldModel``: the next camera frames and state from a short history plus the action.

Read top to bottom, one transition is

    frames  o_{t-K+1..t}  (uint8, K = history)  ->  x in [-1, 1], stacked as channels
    cond    = MLP([state_{t-K+1..t}, a_t] normalised)      (added to the U-Net's time embedding)
    delta   = U-Net(space_to_depth(x [, noisy delta]), cond) (the change from o_t, in [-1, 1] units)
    o_{t+1} = o_t + delta;   state_{t+1} = state_t + std * MLP_state(...)
    (a pixel whose |delta| stays under change_floor keeps o_t's value)

With ``extra_cameras`` a "frame" is every camera's image stacked along the channels
(``[H, W, 3 * cameras]``, ``camera`` first): one U-Net imagines all of them at once.

Predicting the change, with the U-Net's output layer zeroed at init, makes an untrained
model exactly copy-last-frame: the strong baseline at 10 Hz, where most pixels do not
move. Actions are absolute end-effector targets, so the action and the current state
together say where the arm goes next; both feed the conditioning vector.

``head="residual"`` regresses delta in one pass (timestep 0). ``head="diffusion"``
trains diffusers' ``DDPMScheduler`` on ``delta_scale * delta`` (predicting the sample)
and samples it with ``DDIMScheduler`` in ``sampling_steps`` steps, DIAMOND-style. The
cosine schedule reaches pure noise at its last timestep and the sampler starts there
("trailing" spacing), so sampling from N(0, 1) matches what training saw.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
import torch.nn.functional as F
from diffusers import DDIMScheduler, DDPMScheduler, UNet2DModel
from torch import nn

from robot_learn.world_models.configuration_world_model import WorldModelConfig


def stack_cameras(images: Mapping[str, Any], cameras: Sequence[str]) -> Any:
    """``{camera: [..., H, W, 3]}`` -> ``[..., H, W, 3 * len(cameras)]`` in ``cameras``' order
    (numpy arrays or torch tensors)."""
    parts = [images[c] for c in cameras]
    if len(parts) == 1:
        return parts[0]
    return torch.cat(parts, dim=-1) if isinstance(parts[0], torch.Tensor) else np.concatenate(parts, axis=-1)


def split_cameras(frame: Any, cameras: Sequence[str]) -> dict[str, Any]:
    """The inverse of :func:`stack_cameras`: ``{camera: frame[..., 3i:3i+3]}``."""
    return {c: frame[..., 3 * i: 3 * i + 3] for i, c in enumerate(cameras)}


class VideoWorldModel(nn.Module):
    """Action-conditioned next-frame and next-state predictor built on diffusers' ``UNet2DModel``.

    ``stats`` (``{"state": {"mean", "std"}, "action": {...}}``, from the store) fills the
    normalisers; ``None`` leaves placeholders for weights loaded afterwards.
    """

    name: ClassVar[str] = "video_world_model"
    config_class: ClassVar[type] = WorldModelConfig

    def __init__(self, config: WorldModelConfig, stats: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        super().__init__()
        self.config = config
        c = config
        s2 = c.space_to_depth ** 2
        rgb = 3 * len(c.cameras)  # channels of one (stacked) frame
        cond_dim = c.block_out_channels[0] * 4  # UNet2DModel's time-embedding width
        in_frames = c.history + (1 if c.head == "diffusion" else 0)
        levels = len(c.block_out_channels)
        self.unet = UNet2DModel(
            sample_size=c.image_size // c.space_to_depth,
            in_channels=rgb * in_frames * s2, out_channels=rgb * s2,
            down_block_types=("DownBlock2D",) * levels, up_block_types=("UpBlock2D",) * levels,
            block_out_channels=c.block_out_channels, layers_per_block=c.layers_per_block,
            norm_num_groups=c.norm_num_groups, add_attention=False, class_embed_type="identity",
        )
        nn.init.zeros_(self.unet.conv_out.weight)  # untrained == copy-last-frame
        nn.init.zeros_(self.unet.conv_out.bias)
        cond_in = c.history * c.state_dim + c.action_dim
        self.condition = nn.Sequential(nn.Linear(cond_in, cond_dim), nn.SiLU(), nn.Linear(cond_dim, cond_dim))
        self.state_head = nn.Sequential(nn.Linear(cond_in, c.state_hidden), nn.SiLU(),
                                        nn.Linear(c.state_hidden, c.state_hidden), nn.SiLU(),
                                        nn.Linear(c.state_hidden, c.state_dim))
        for key, dim in (("state", c.state_dim), ("action", c.action_dim), ("state_delta", c.state_dim)):
            mean = torch.zeros(dim)
            std = torch.ones(dim)
            if stats is not None and key in stats:
                mean = torch.as_tensor(stats[key]["mean"], dtype=torch.float32).reshape(dim)
                std = torch.as_tensor(stats[key]["std"], dtype=torch.float32).reshape(dim).clamp_min(1e-3)
            self.register_buffer(f"{key}_mean", mean)
            self.register_buffer(f"{key}_std", std)
        schedule = dict(num_train_timesteps=c.num_train_timesteps, beta_schedule="squaredcos_cap_v2",
                        prediction_type="sample", clip_sample=False)
        self.train_scheduler = DDPMScheduler(**schedule)
        self.sample_scheduler = DDIMScheduler(**schedule, timestep_spacing="trailing")

    @property
    def device(self) -> torch.device:
        return self.unet.conv_out.weight.device

    @property
    def obs_shapes(self) -> dict[str, tuple[int, ...]]:
        """What a rollout in this model provides per step (a policy must need no more)."""
        size = self.config.image_size
        return {"state": (self.config.state_dim,), **{f"images/{c}": (size, size, 3) for c in self.config.cameras}}

    # --- one transition -----------------------------------------------------------
    def _conditioning(self, states: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        s = (states.float() - self.state_mean) / self.state_std
        a = (action.float() - self.action_mean) / self.action_std
        return torch.cat([s.flatten(1), a], dim=1)

    def _denoise(self, frames: torch.Tensor, noisy: torch.Tensor | None, t: torch.Tensor,
                 cond: torch.Tensor) -> torch.Tensor:
        """The U-Net at (space-to-depth) low resolution; returns delta at full resolution."""
        x = frames if noisy is None else torch.cat([frames, noisy], dim=1)
        x = F.pixel_unshuffle(x, self.config.space_to_depth)
        out = self.unet(x, t, class_labels=self.condition(cond)).sample
        return F.pixel_shuffle(out, self.config.space_to_depth)

    @staticmethod
    def frames_to_unit(frames: torch.Tensor) -> torch.Tensor:
        """uint8 ``[B, K, H, W, C]`` -> float ``[B, K*C, H, W]`` in [-1, 1]."""
        b, k, h, w, c = frames.shape
        return (frames.float() / 127.5 - 1.0).permute(0, 1, 4, 2, 3).reshape(b, k * c, h, w)

    def compute_loss(self, batch: Mapping[str, Any]) -> dict[str, torch.Tensor]:
        """MSE of the predicted frame change and the normalised state change.

        ``batch`` is a sampler window with ``obs_horizon = history + 1`` and
        ``action_horizon = history``: the last obs step is the target, the action that
        led to it is ``action[:, history - 1]``. Windows anchored at an episode's first
        step (no real transition, edge padding) are left out of the loss.
        """
        k, rgb = self.config.history, 3 * len(self.config.cameras)
        frames = stack_cameras(batch["obs"]["images"], self.config.cameras)
        states = batch["obs"]["state"].float()
        action = batch["action"][:, k - 1].float()
        x = self.frames_to_unit(frames)
        history, target = x[:, : rgb * k], x[:, rgb * k:]
        delta = target - history[:, -rgb:]
        cond = self._conditioning(states[:, :k], action)
        if self.config.head == "residual":
            pred = self._denoise(history, None, torch.zeros(len(x), device=x.device, dtype=torch.long), cond)
        else:
            scale = self.config.delta_scale
            t = torch.randint(0, self.config.num_train_timesteps, (len(x),), device=x.device)
            noisy = self.train_scheduler.add_noise(delta * scale, torch.randn_like(delta), t)
            pred = self._denoise(history, noisy, t, cond) / scale
        state_delta = (states[:, k] - states[:, k - 1] - self.state_delta_mean) / self.state_delta_std
        valid = (batch["t"] >= 1).float() if "t" in batch else torch.ones(len(x), device=x.device)
        weight = valid / valid.sum().clamp_min(1.0)
        frame_loss = ((pred - delta) ** 2).mean(dim=(1, 2, 3))
        state_loss = ((self.state_head(cond) - state_delta) ** 2).mean(dim=1)
        frame_loss, state_loss = (frame_loss * weight).sum(), (state_loss * weight).sum()
        return {"loss": frame_loss + state_loss, "frame_loss": frame_loss.detach(), "state_loss": state_loss.detach()}

    def forward(self, batch: Mapping[str, Any]) -> dict[str, torch.Tensor]:
        return self.compute_loss(batch)

    @torch.no_grad()
    def predict_next(self, frames: torch.Tensor, states: torch.Tensor, action: torch.Tensor,
                     generator: torch.Generator | None = None) -> dict[str, torch.Tensor]:
        """One imagined step.

        ``frames`` uint8 ``[B, history, H, W, 3 * cameras]`` (:func:`stack_cameras`), ``states``
        ``[B, history, state_dim]``, ``action`` ``[B, action_dim]``. Returns ``frame``: float
        ``[B, H, W, 3 * cameras]`` in pixel units, NOT clipped (a caller checks the range before casting to uint8), and
        ``state``: ``[B, state_dim]``.
        """
        x = self.frames_to_unit(frames)
        rgb = frames.shape[-1]
        cond = self._conditioning(states, action)
        if self.config.head == "residual":
            delta = self._denoise(x, None, torch.zeros(len(x), device=x.device, dtype=torch.long), cond)
        else:
            scheduler = self.sample_scheduler
            scheduler.set_timesteps(self.config.sampling_steps, device=x.device)
            delta = torch.randn(x[:, :rgb].shape, generator=generator, device=x.device)
            for t in scheduler.timesteps:
                out = self._denoise(x, delta, t.expand(len(x)), cond)
                delta = scheduler.step(out, t, delta).prev_sample
            delta = delta / self.config.delta_scale
        if self.config.change_floor > 0:  # pixels that barely change keep their last value (per camera)
            b, _, h, w = delta.shape
            per_camera = delta.reshape(b, rgb // 3, 3, h, w)
            moved = per_camera.abs().amax(dim=2, keepdim=True) * 127.5 > self.config.change_floor
            delta = (per_camera * moved).reshape(b, rgb, h, w)
        frame = (x[:, -rgb:] + delta + 1.0) * 127.5
        state = states[:, -1].float() + self.state_head(cond) * self.state_delta_std + self.state_delta_mean
        return {"frame": frame.permute(0, 2, 3, 1), "state": state}

    def save(self, directory: str | Path) -> None:
        """``config.yaml`` + ``model.safetensors``, the policies' checkpoint format."""
        from robot_learn.world_models.checkpoint import save_world_model

        save_world_model(self, directory)
