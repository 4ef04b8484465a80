"""Continuous diffusion policy (Chi et al. 2023), written to read top to bottom.

Training (DDPM, Ho et al. 2020): normalise the action chunk a0 to [-1, 1], pick
t ~ U{0..T-1} and eps ~ N(0, I), form a_t = sqrt(abar_t) a0 + sqrt(1 - abar_t) eps
(``DDPMScheduler.add_noise``) and regress the denoiser's output on eps
(``prediction_type="epsilon"``) or on a0 (``"sample"``), conditioned on the encoded
observation window.

Sampling: start from Gaussian noise and run a diffusers scheduler (DDPM, DDIM or
DPM-Solver++) for ``num_inference_steps``, clip to [-1, 1], unnormalise. An optional
``Guidance`` (``guidance.py``) nudges each step's predicted clean chunk along an
objective's gradient before the scheduler steps (ReGuide, ITPS; ``itps.py``).

With ``head="mip"`` the same denoiser is trained on MIP's two-point loss instead and
predicts in two noiseless passes (``mip_head.py``).
"""

from __future__ import annotations

import math
import warnings

from collections.abc import Iterable, Mapping
from typing import Any

import torch
import torch.nn.functional as F
from diffusers import DDIMScheduler, DDPMScheduler, DPMSolverMultistepScheduler

from robot_learn.policies.base import Obs, Policy
from robot_learn.policies.compiled_call import CompiledCall, cpu_runs_bf16, set_compiled_bf16
from robot_learn.policies.config_checks import check_choice
from robot_learn.policies.diffusion.configuration_diffusion import INFERENCE_SCHEDULERS, DiffusionConfig
from robot_learn.policies.diffusion.guidance import Guidance
from robot_learn.policies.diffusion.matmul_conv import set_matmul_inference
from robot_learn.policies.diffusion.mip_head import MIP_PASSES, check_sampler_fits_head, mip_loss, mip_sample
from robot_learn.policies.diffusion.transformer_denoiser import TransformerDenoiser
from robot_learn.policies.diffusion.unet1d import ConditionalUnet1D
from robot_learn.policies.normalizer import MinMaxNormalizer
from robot_learn.policies.observation_encoder import ObservationEncoder
from robot_learn.policies.registry import register_policy
from robot_learn.policies.text_encoder import PretrainedTextEncoder, TextEncoder, VocabTextEncoder, build_vocab
from robot_learn.policies.vision_encoder import set_channels_last

Stats = Mapping[str, Mapping[str, Any]]
# How far past a 0.05 step of the sampling range new data may reach (normalised units) before
# the range widens: float32 rounding puts the demos' own extremes at 1.0000001.
WIDEN_SLACK = 1e-3


def make_inference_scheduler(kind: str, config: DiffusionConfig):
    """The diffusers scheduler used for sampling, sharing the training noise schedule."""
    check_choice("inference_scheduler", kind, INFERENCE_SCHEDULERS)
    common = dict(
        num_train_timesteps=config.num_train_timesteps, beta_schedule=config.beta_schedule, prediction_type=config.prediction_type
    )
    if kind == "ddpm":
        return DDPMScheduler(**common, clip_sample=config.clip_sample, clip_sample_range=config.clip_sample_range)
    if kind == "ddim":
        return DDIMScheduler(**common, clip_sample=config.clip_sample, clip_sample_range=config.clip_sample_range,
                             set_alpha_to_one=True)
    # "dpmsolver" has no clip_sample. Its data prediction x0 = (x_t - sigma*eps)/alpha divides by
    # alpha ~ 0 at the noisiest squaredcos step, so unclipped x0 explodes (0% success measured);
    # thresholding at 1.0 is the same clamp of x0 to [-1, 1] that DDIM/DDPM apply. (diffusers' dynamic
    # thresholding divides x0 by its bound, so a widened clip_sample_range reaches ddpm/ddim only.)
    return DPMSolverMultistepScheduler(**common, algorithm_type="dpmsolver++", solver_order=2,
                                       thresholding=config.clip_sample, sample_max_value=1.0)


def masked_mse(prediction: torch.Tensor, target: torch.Tensor, is_pad: torch.Tensor | None) -> torch.Tensor:
    """Mean squared error over ``[B, Ta, A]`` chunks, leaving out the action steps
    ``is_pad`` ``[B, Ta]`` marks; exactly ``F.mse_loss`` when none is marked. The choice is
    made on the device (``torch.where``), so a training step stays free of host syncs."""
    plain = F.mse_loss(prediction, target)
    if is_pad is None:
        return plain
    keep = (~is_pad.bool()).unsqueeze(-1).to(prediction.dtype)
    masked = ((prediction - target) ** 2 * keep).sum() / (keep.sum() * prediction.shape[-1]).clamp_min(1.0)
    return torch.where(is_pad.any(), masked, plain)


def _make_text_encoder(config: DiffusionConfig) -> TextEncoder | None:
    if config.text_encoder == "vocab":
        return VocabTextEncoder(config.vocab, dim=config.text_dim, max_len=config.text_max_len, num_layers=config.text_layers)
    if config.text_encoder == "pretrained":
        return PretrainedTextEncoder(config.pretrained_text_path, out_dim=config.text_dim, max_len=config.text_max_len)
    return None


@register_policy
class DiffusionPolicy(Policy):
    """Diffusion policy over action chunks with a U-Net or transformer denoiser.

    ``stats`` (``EpisodeStore.stats``) must cover ``"action"`` and every key of
    ``config.state_dims``. For ``text_encoder="vocab"`` with an empty
    ``config.vocab``, pass the dataset's ``instructions`` to build the vocabulary;
    it is stored in ``self.config`` and so saved with the checkpoint.
    """

    name = "diffusion"
    config_class = DiffusionConfig

    def __init__(self, config: DiffusionConfig, stats: Stats | None = None, instructions: Iterable[str] | None = None) -> None:
        if config.text_encoder == "vocab" and not config.vocab:
            if instructions is None:
                raise ValueError("text_encoder='vocab' needs config.vocab or the dataset's instructions (instructions=...)")
            config = config.with_changes(vocab=build_vocab(instructions))
        super().__init__(config)
        if stats is not None and "action" not in stats:
            raise ValueError(f"stats lack 'action'; stats have {sorted(stats)}")
        self.action_normalizer = MinMaxNormalizer(config.action_dim, None if stats is None else stats["action"], name="action")
        self.obs_encoder = ObservationEncoder(
            state_dims=config.state_dims,
            camera_names=config.camera_names,
            text_encoder=_make_text_encoder(config),
            stats=stats,
            state_hidden_dims=config.state_hidden_dims,
            state_feature_dim=config.state_feature_dim,
            image_size=config.image_size,
            crop_size=config.crop_size,
            vision_channels=config.vision_channels,
            vision_blocks_per_stage=config.vision_blocks_per_stage,
            num_keypoints=config.num_keypoints,
            vision_feature_dim=config.vision_feature_dim,
            share_vision_encoder=config.share_vision_encoder,
            vision_film=config.vision_film,
            vision_pool=config.vision_pool,
            vision_stem_stride=config.vision_stem_stride,
        )
        step_dim, text_dim = self.obs_encoder.step_dim, self.obs_encoder.text_dim
        if config.denoiser == "unet":
            self.denoiser = ConditionalUnet1D(
                config.action_dim,
                global_cond_dim=config.obs_horizon * step_dim + text_dim,
                down_dims=config.down_dims,
                kernel_size=config.kernel_size,
                groups=config.unet_groups,
                timestep_embed_dim=config.timestep_embed_dim,
            )
        else:
            self.denoiser = TransformerDenoiser(
                config.action_dim,
                config.action_horizon,
                config.obs_horizon,
                step_dim,
                text_dim,
                embed_dim=config.transformer_dim,
                num_layers=config.transformer_layers,
                num_heads=config.transformer_heads,
                num_cond_layers=config.transformer_cond_layers,
                dropout=config.transformer_dropout,
                causal=config.transformer_causal,
            )
        set_matmul_inference(self.denoiser, config.fast_inference)
        self.compiled_denoiser = CompiledCall(self.denoiser, "the denoiser")  # used when config.compile_inference
        # Training adds noise with the DDPM forward process, the same schedule every sampler reverses.
        self.noise_scheduler = make_inference_scheduler("ddpm", config)
        self.sampler = make_inference_scheduler(config.inference_scheduler, config)
        self.num_inference_steps = MIP_PASSES if config.head == "mip" else config.num_inference_steps  # network calls
        self.set_compiled_precision()

    def set_inference_scheduler(self, kind: str, num_inference_steps: int | None = None) -> None:
        """Switch the sampler (``ddpm``, ``ddim`` or ``dpmsolver``) and its step count without retraining.

        A ``head="mip"`` policy has one way to predict, ``kind="mip"`` (two passes); asking
        either head for the other's is a ValueError naming both."""
        check_sampler_fits_head(kind, self.config.head)
        if self.config.head == "mip":
            if num_inference_steps not in (None, MIP_PASSES):
                raise ValueError(f"head 'mip' always runs {MIP_PASSES} passes, got num_inference_steps={num_inference_steps}")
            return
        steps = self.num_inference_steps if num_inference_steps is None else int(num_inference_steps)
        if not 1 <= steps <= self.config.num_train_timesteps:
            raise ValueError(f"num_inference_steps must be in [1, {self.config.num_train_timesteps}], got {steps}")
        self.sampler = make_inference_scheduler(kind, self.config)
        self.num_inference_steps = steps

    def set_fast_inference(self, enabled: bool, compile: bool | None = None, bf16: bool | None = None) -> None:
        """Switch the U-Net's matmul inference path (config ``fast_inference``) and, when ``compile``
        is given, torch.compile of the denoiser and the image encoders (``compile_inference``);
        same actions either way. ``bf16`` given: those compiled calls in bf16 (``compile_bf16``)."""
        compile_inference = self.config.compile_inference if compile is None else bool(compile)
        compile_bf16 = self.config.compile_bf16 if bf16 is None else bool(bf16)
        self.config = self.config.with_changes(fast_inference=bool(enabled), compile_inference=compile_inference,
                                               compile_bf16=compile_bf16)
        set_matmul_inference(self.denoiser, enabled)
        set_channels_last(self, enabled and not self.training)
        self.set_compiled_precision()

    def set_compiled_precision(self) -> None:
        """The compiled calls in bf16 when ``compile_bf16`` asks and this CPU runs bf16 natively
        (fp32 after a warning if not); fp32 otherwise."""
        bf16 = self.config.compile_bf16
        if bf16 and self.device.type == "cpu" and not cpu_runs_bf16():
            warnings.warn("compile_bf16=true: this CPU has no native bf16 (AVX512-BF16 or AMX); "
                          "compiled inference runs in fp32", RuntimeWarning, stacklevel=3)
            bf16 = False
        set_compiled_bf16(self, bf16)

    def train(self, mode: bool = True) -> DiffusionPolicy:
        """``nn.Module.train``; in eval mode with ``fast_inference`` the image encoders' convolutions
        also run channels-last (``set_channels_last``: same actions, faster for wide encoders)."""
        super().train(mode)
        set_channels_last(self, self.config.fast_inference and not mode)
        return self

    # --- training ---------------------------------------------------------------
    def compute_loss(self, batch: Mapping[str, Any]) -> dict[str, torch.Tensor]:
        """DDPM denoising loss (MIP's two-point loss for ``head="mip"``) on a batch
        ``{"obs", "action" [B, Ta, A], "instruction"?, "action_is_pad" [B, Ta]?}``; the DDPM
        loss leaves out padded action steps (a span's cut, see :mod:`robot_learn.data.sampler`)."""
        actions = self._batch_actions(batch)
        obs_features, text_features = self.encode(self._obs_from_batch(batch))
        clean = self.action_normalizer.normalize(actions)  # a0 in [-1, 1]
        if self.config.head == "mip":
            return mip_loss(self.denoiser, clean, obs_features, text_features, self.config.mip_t_star)
        noise = torch.randn_like(clean)  # eps
        timesteps = torch.randint(0, self.config.num_train_timesteps, (clean.shape[0],), device=clean.device)
        noisy = self.noise_scheduler.add_noise(clean, noise, timesteps)  # a_t
        prediction = self.denoiser(noisy, timesteps, obs_features, text_features).float()
        target = noise if self.config.prediction_type == "epsilon" else clean
        return {"loss": masked_mse(prediction, target, batch.get("action_is_pad"))}

    # --- inference --------------------------------------------------------------
    @torch.no_grad()
    def predict_action_chunk(self, obs: Obs, generator: torch.Generator | None = None,
                             guidance: Guidance | None = None) -> torch.Tensor:
        """Sample an unnormalised chunk ``[B, action_horizon, A]`` from ``config.init_noise_scale`` times Gaussian
        noise; a seeded ``generator`` makes it reproducible (the MIP head draws no noise). ``guidance`` steers
        every denoising step with an objective's gradient on the predicted clean chunk (``guidance.py``); None
        samples exactly as without it."""
        obs_features, text_features = self.encode(obs)
        batch, device = obs_features.shape[0], obs_features.device
        shape = (batch, self.action_horizon, self.action_dim)
        if guidance is not None:
            guidance.check_fits(self)
        if self.config.head == "mip":
            denoiser = self.compiled_denoiser if self.config.compile_inference else self.denoiser
            sample = mip_sample(denoiser, obs_features, text_features, shape, self.config.mip_t_star)
            return self.action_normalizer.unnormalize(self.clamp_chunk(sample))
        noise_device = generator.device if generator is not None else device
        sample = torch.randn(shape, generator=generator, device=noise_device, dtype=torch.float32).to(device)
        if self.config.init_noise_scale != 1.0:  # 0: from zero noise, one chunk per observation (ddim, dpmsolver)
            sample = sample * self.config.init_noise_scale
        sample = self.denoise(sample, obs_features, text_features, generator=generator, guidance=guidance)
        return self.action_normalizer.unnormalize(self.clamp_chunk(sample))

    def clamp_chunk(self, sample: torch.Tensor) -> torch.Tensor:
        """A normalised chunk clipped to +-``clip_sample_range`` (the range the policy may act in)."""
        bound = self.config.clip_sample_range
        return sample.clamp(-bound, bound)

    def widen_sample_range(self, extent: float) -> bool:
        """Let sampled chunks reach ``extent`` (the largest |normalised action| of new training
        data, rounded up to 0.05) when that is beyond ``clip_sample_range``; True if it widened.

        The normaliser stays as trained, so the weights keep their meaning; without this a policy
        fine-tuned on actions beyond its first demos' range is clipped back inside it. The
        ``dpmsolver`` sampler keeps x0 inside [-1, 1] whatever the range (see
        :func:`make_inference_scheduler`); ``ddpm`` and ``ddim`` (the default) reach the widened one.
        An overshoot under ``WIDEN_SLACK`` is not one: the demos' own extreme actions normalise to
        1.0000001 in float32, which would widen every round's range to 1.05."""
        bound = math.ceil((float(extent) - WIDEN_SLACK) * 20.0) / 20.0
        if not bound > self.config.clip_sample_range:
            return False
        self.config = self.config.with_changes(clip_sample_range=bound)
        if self.config.head != "mip":
            self.sampler = make_inference_scheduler(self.config.inference_scheduler, self.config)
        return True

    def denoise(self, sample: torch.Tensor, obs_features: torch.Tensor, text_features: torch.Tensor | None,
                generator: torch.Generator | None = None, guidance: Guidance | None = None,
                start_timestep: int | None = None) -> torch.Tensor:
        """Run the sampler from the normalised ``sample`` to a clean chunk (normalised, unclipped).

        ``start_timestep`` skips the scheduler's noisier steps (``sample`` is then noised to that
        level, as in ITPS's biased initialisation); ``guidance`` replaces each step's model output
        with the guided one before the scheduler steps."""
        batch, device = sample.shape[0], sample.device
        denoiser = self.compiled_denoiser if self.config.compile_inference else self.denoiser
        self.sampler.set_timesteps(self.num_inference_steps, device=device)
        for t in self.sampler.timesteps:
            if start_timestep is not None and int(t) > start_timestep:
                continue
            timesteps = torch.full((batch,), int(t), device=device, dtype=torch.long)
            model_output = denoiser(sample, timesteps, obs_features, text_features).float()
            if guidance is not None:
                sample, model_output = guidance.guide(
                    self, lambda x: denoiser(x, timesteps, obs_features, text_features).float(),
                    sample, model_output, int(t), generator)
            sample = self.sampler.step(model_output, t, sample, generator=generator).prev_sample.float()
        return sample

    # --- helpers ----------------------------------------------------------------
    def encode(self, obs: Obs) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Observation features ``[B, obs_horizon, D]`` and text features (or None) that condition
        the denoiser; samplers built on :meth:`denoise` encode once and sample many times."""
        obs_features, text_features = self.obs_encoder(self.with_frame_features(obs),
                                                       compiled=self.config.compile_inference)
        if obs_features.shape[1] != self.obs_horizon:
            raise ValueError(f"observations must have obs_horizon={self.obs_horizon} steps, got {obs_features.shape[1]}")
        return obs_features, text_features
