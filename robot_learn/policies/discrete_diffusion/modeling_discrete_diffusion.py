"""Discrete Diffusion VLA (Liang et al., arXiv 2508.20072), written to read top to bottom.

One transformer over [image patches | instruction words | proprioception | action
tokens]. Actions are binned per dimension (:class:`ActionTokenizer`), a chunk of H
steps x A dims is L = H * A tokens.

Training: t ~ U(0, 1), mask ceil(gamma(t) L) action tokens with gamma(t) =
cos(pi/2 (1 - t)), and minimise the cross-entropy of the true bins at the masked
positions only (optionally against Gaussian-smoothed bin targets, ``label_sigma_bins``).

Inference: MaskGIT-style decoding in K rounds with secondary re-masking, or a
baseline (adaptive without re-masking, single-pass parallel, left-to-right
autoregressive); see :mod:`.decoding`. ``last_nfe`` holds the network evaluations
of the latest chunk.
"""

from __future__ import annotations

import warnings

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from robot_learn.policies.base import Obs, Policy
from robot_learn.policies.compiled_call import CompiledCall
from robot_learn.policies.discrete_diffusion.action_tokenizer import ActionTokenizer
from robot_learn.policies.discrete_diffusion.backbone import HFBackbone, PrefixCache, TinyTransformer
from robot_learn.policies.discrete_diffusion.configuration_discrete_diffusion import DiscreteDiffusionConfig
from robot_learn.policies.discrete_diffusion.decoding import DecodeResult, DecodeSettings, decode_tokens, round_commits
from robot_learn.policies.discrete_diffusion.grounding import ROLE_NAMES, slot_roles
from robot_learn.policies.discrete_diffusion.mask_schedule import sample_training_mask
from robot_learn.policies.discrete_diffusion.observation_tokens import ObservationTokens
from robot_learn.policies.registry import register_policy
from robot_learn.policies.text_encoder import build_vocab

Stats = Mapping[str, Mapping[str, Any]]


def with_vocab(config: DiscreteDiffusionConfig, instructions: Iterable[str] | None) -> DiscreteDiffusionConfig:
    """``config`` with its word vocabulary built from ``instructions`` when it uses language
    and has none yet (then ``instructions`` are required)."""
    if not config.use_language or config.vocab:
        return config
    if instructions is None:
        raise ValueError("use_language=True needs config.vocab or the dataset's instructions (instructions=...)")
    return config.with_changes(vocab=build_vocab(instructions) or ["<none>"])


@register_policy
class DiscreteDiffusionPolicy(Policy):
    """Masked discrete diffusion over binned action chunks.

    ``stats`` (``EpisodeStore.stats``) must cover ``"action"`` (with ``q01``/``q99``)
    and every key of ``config.state_dims``. With ``use_language`` and an empty
    ``config.vocab``, pass the dataset's ``instructions``; the vocabulary is then
    stored in ``self.config`` and saved with the checkpoint.
    """

    name = "discrete_diffusion"
    config_class = DiscreteDiffusionConfig

    def __init__(self, config: DiscreteDiffusionConfig, stats: Stats | None = None,
                 instructions: Iterable[str] | None = None) -> None:
        config = with_vocab(config, instructions)
        super().__init__(config)
        if stats is not None and "action" not in stats:
            raise ValueError(f"stats lack 'action'; stats have {sorted(stats)}")
        dim = config.hidden_dim
        self.tokenizer = ActionTokenizer(config.action_dim, config.num_bins, None if stats is None else stats["action"])
        # Saved with the weights so a checkpoint's chunk shape can be checked against a config.
        self.register_buffer("chunk_shape", torch.tensor([config.action_horizon, config.action_dim]))
        self.observation_tokens = ObservationTokens(
            dim, config.obs_horizon, config.state_dims, config.camera_names,
            vocab=config.vocab if config.use_language else None, text_max_len=config.text_max_len,
            image_size=config.image_size, crop_size=config.crop_size, stem_channels=config.stem_channels,
            patch_size=config.patch_size, stats=stats, state_tokens=config.state_tokens,
        )
        length = config.num_action_tokens
        self.action_embedding = nn.Embedding(self.tokenizer.vocab_size, dim)
        self.action_position = nn.Parameter(torch.randn(length, dim) * 0.02)
        if config.backbone == "tiny":
            self.backbone: nn.Module = TinyTransformer(dim, config.num_layers, config.num_heads, config.mlp_ratio,
                                                       config.dropout, prefix_cached=config.attention == "prefix_cached")
        else:
            self.backbone = HFBackbone(dim, config.hf_path, config.hf_config, config.lora_rank, config.lora_alpha,
                                       config.lora_targets)
        self.head = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, config.num_bins))
        if config.grounding_weight > 0:
            self.grounding_head = nn.Linear(dim, len(ROLE_NAMES))
        self.decode_settings = self._settings_from(config)
        self.last_decode: DecodeResult | None = None
        self.compiled_round = CompiledCall(self._action_round, "the decoding round")  # config.compile_inference
        self._warned_eager_rounds = False

    @staticmethod
    def _settings_from(config: DiscreteDiffusionConfig) -> DecodeSettings:
        return DecodeSettings(config.decoding, config.decoding_rounds, config.confidence, config.token_temperature,
                              config.choice_temperature, config.remask_threshold, config.remask_margin)

    @property
    def training_obs_keys(self) -> tuple[str, ...]:
        """With the grounding loss, training batches also carry ``env_state`` (its role labels)."""
        keys = super().training_obs_keys
        extra = ("env_state",) if self.config.grounding_weight > 0 and "env_state" not in keys else ()
        return (*keys, *extra)

    @property
    def last_nfe(self) -> int:
        """Network evaluations used for the latest predicted chunk (0 before any)."""
        return 0 if self.last_decode is None else self.last_decode.nfe

    def set_decoding(self, mode: str | None = None, rounds: int | None = None, **settings: Any) -> None:
        """Switch the decoding mode / rounds / other decode knobs without retraining."""
        current = self.decode_settings
        changes = {"mode": mode or current.mode, "rounds": rounds or current.rounds, **settings}
        self.decode_settings = DecodeSettings(**{**current.__dict__, **changes})

    def set_compile_inference(self, enabled: bool) -> None:
        """Switch ``compile_inference`` (torch.compile of each round and of the frame encoder)."""
        self.config = self.config.with_changes(compile_inference=bool(enabled))

    def warn_if_rounds_stay_eager(self, compile_inference: bool) -> None:
        """At the first chunk decoded with ``compile_inference`` on, one warning if only the frame
        encoder compiles: rounds compile against a cached observation prefix, which only the tiny
        backbone with ``attention=prefix_cached`` has."""
        if compile_inference and not self.prefix_cached and not self._warned_eager_rounds:
            self._warned_eager_rounds = True
            warnings.warn(f"compile_inference compiles the decoding rounds only for backbone=tiny with "
                          f"attention=prefix_cached; this policy has backbone={self.config.backbone}, "
                          f"attention={self.config.attention}, so its rounds run eagerly (the frame encoder, "
                          f"if any, is still compiled)", stacklevel=4)

    # --- training ---------------------------------------------------------------
    def compute_loss(self, batch: Mapping[str, Any]) -> dict[str, torch.Tensor]:
        """Masked-token cross-entropy; also ``clipped_fraction`` (action values outside
        q01..q99, clipped before binning) and ``masked_accuracy``."""
        actions = self._batch_actions(batch)
        targets, clipped = self.tokenizer.encode(actions)
        targets = targets.reshape(actions.shape[0], -1)  # [B, L], time-major: step h, dim a -> h * A + a
        masked = sample_training_mask(targets.shape[0], targets.shape[1], device=targets.device)
        inputs = torch.where(masked, torch.full_like(targets, self.tokenizer.mask_id), targets)
        obs = self.with_frame_features(self._obs_from_batch(batch))
        prefix, prefix_pad = self.observation_tokens(obs)
        logits, prefix_hidden = self._logits_full(prefix, prefix_pad, inputs, with_prefix=True)
        if self.config.label_sigma_bins > 0:
            soft = self.tokenizer.soft_targets(actions, self.config.label_sigma_bins).reshape(*targets.shape, -1)
            loss = F.cross_entropy(logits[masked].float(), soft[masked])
        else:
            loss = F.cross_entropy(logits[masked].float(), targets[masked])
        with torch.no_grad():
            accuracy = (logits[masked].argmax(-1) == targets[masked]).float().mean()
        out = {"loss": loss, "clipped_fraction": clipped.float().mean(), "masked_accuracy": accuracy}
        if self.config.grounding_weight > 0:
            grounding, grounding_accuracy = self._grounding_loss(obs, prefix_hidden)
            out.update(loss=loss + self.config.grounding_weight * grounding, action_loss=loss,
                       grounding_loss=grounding, grounding_accuracy=grounding_accuracy)
        return out

    def _grounding_loss(self, obs: Mapping[str, Any], prefix_hidden: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Cross-entropy of each slot token's role (see :mod:`.grounding`) at the latest obs step."""
        key = self.config.grounding_key
        if "env_state" not in obs:
            raise ValueError("grounding_weight > 0 needs 'env_state' in the training batch for the role labels "
                             "(sample it too: WindowSampler(obs_keys=(..., 'env_state')))")
        slots = self.config.state_tokens[key]
        labels = slot_roles(obs[key][:, -1], obs["env_state"][:, -1], slots)
        where = self.observation_tokens.state_token_slice(key, prefix_hidden.shape[1])
        hidden = prefix_hidden[:, where][:, -slots:]  # the latest step's slot tokens
        logits = self.grounding_head(hidden)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1))
        return loss, (logits.argmax(-1) == labels).float().mean().detach()

    # --- inference --------------------------------------------------------------
    @torch.no_grad()
    def predict_action_chunk(self, obs: Obs, generator: torch.Generator | None = None) -> torch.Tensor:
        """Decode an unnormalised chunk ``[B, action_horizon, A]`` (bin centres)."""
        tokens = self.predict_tokens(obs, generator)
        return self.tokenizer.decode(tokens.reshape(tokens.shape[0], self.action_horizon, self.action_dim))

    @torch.no_grad()
    def predict_tokens(self, obs: Obs, generator: torch.Generator | None = None, keep_trace: bool = False) -> torch.Tensor:
        """Decoded action tokens ``[B, L]``; the decode record goes to ``self.last_decode``."""
        logits_fn, batch = self.logits_fn(obs)
        self.last_decode = decode_tokens(logits_fn, batch, self.config.num_action_tokens, self.config.num_bins,
                                         self.decode_settings, generator=generator, device=self.device,
                                         keep_trace=keep_trace)
        return self.last_decode.tokens

    def logits_fn(self, obs: Obs, warn: bool = True) -> tuple[Callable[[torch.Tensor], torch.Tensor], int]:
        """The token logits ``[B, L, num_bins]`` as a function of the (partly masked) action
        tokens ``[B, L]``, for one observation batch (encoded once), and its batch size.
        ``warn=False``: no warning that the rounds stay eager (an ensemble warns once for all)."""
        if self.prefix_cached:
            cache = self.prefix_cache(obs)  # once per chunk, reused by every round
            action_round = self.compiled_round if self.config.compile_inference else self._action_round

            def logits(tokens: torch.Tensor) -> torch.Tensor:
                return action_round(tokens, cache)

            return logits, cache[1].shape[0]
        if warn:
            self.warn_if_rounds_stay_eager(self.config.compile_inference)
        prefix, prefix_pad = self.observation_tokens(self.with_frame_features(obs))

        def full(tokens: torch.Tensor) -> torch.Tensor:
            return self._logits_full(prefix, prefix_pad, tokens)

        return full, prefix.shape[0]

    @property
    def prefix_cached(self) -> bool:
        """Whether rounds run only the action tokens against a cached observation prefix."""
        return isinstance(self.backbone, TinyTransformer) and self.backbone.prefix_cached

    def prefix_cache(self, obs: Obs) -> PrefixCache:
        """The observation prefix's keys and values at every layer (``prefix_cached`` only)."""
        return self.backbone.encode_prefix(*self.observation_tokens(self.with_frame_features(obs)))

    def trace_log_probs(self, obs: Obs, trace: torch.Tensor, temperature: float = 1.0
                        ) -> tuple[torch.Tensor, torch.Tensor]:
        """Log-probabilities, under the current weights, of the tokens each decoding round
        committed (``trace [B, K, L]``: the tokens after each round, as ``predict_tokens(...,
        keep_trace=True)`` leaves in ``last_decode.trace``), sampled at ``temperature``.

        Returns ``log_probs [B, K, L]`` and ``committed [B, K, L]`` (zero where nothing was
        committed). Their sum over a chunk is the log-likelihood of its decoding path given
        which positions each round chose to keep (the choice itself, by confidence, is not
        scored): the per-token terms a policy-gradient ratio needs (:mod:`robot_learn.loops.grpo`).
        Differentiable: all K rounds run as one batch of ``B * K``.
        """
        inputs, committed = self._checked_rounds(trace, temperature)
        logits = self.round_logits(obs, inputs)
        return self._picked(torch.log_softmax(logits.float() / temperature, dim=-1), trace, committed), committed

    def round_logits(self, obs: Obs, inputs: torch.Tensor) -> torch.Tensor:
        """Logits ``[B * K, L, num_bins]`` of every round's input tokens ``inputs [B, K, L]`` (all
        K rounds as one batch, the full sequence: differentiable, unlike the decoding cache)."""
        batch, rounds, length = inputs.shape
        prefix, prefix_pad = self.observation_tokens(self.with_frame_features(obs))
        prefix = prefix.repeat_interleave(rounds, dim=0)
        prefix_pad = prefix_pad.repeat_interleave(rounds, dim=0)
        return self._logits_full(prefix, prefix_pad, inputs.reshape(batch * rounds, length))

    def _checked_rounds(self, trace: torch.Tensor, temperature: float) -> tuple[torch.Tensor, torch.Tensor]:
        """``round_commits`` of a trace whose length and temperature are checked (ValueError)."""
        if temperature <= 0:
            raise ValueError(f"temperature must be > 0 to score sampled tokens, got {temperature}")
        tokens = self.config.num_action_tokens
        if trace.ndim != 3 or trace.shape[2] != tokens:
            raise ValueError(f"trace must be [batch, rounds, {tokens}] (this policy decodes {tokens} tokens per "
                             f"chunk), got {tuple(trace.shape)}")
        return round_commits(trace, self.tokenizer.mask_id)

    def _picked(self, log_probs: torch.Tensor, trace: torch.Tensor, committed: torch.Tensor) -> torch.Tensor:
        """The log-probabilities ``[B * K, L, bins]`` of the traced tokens, ``[B, K, L]``, zero where
        nothing was committed."""
        batch, rounds, length = trace.shape
        chosen = trace.reshape(batch * rounds, length).clamp_max(self.config.num_bins - 1)
        picked = log_probs.gather(-1, chosen.unsqueeze(-1)).squeeze(-1).reshape(batch, rounds, length)
        return picked * committed

    # --- checkpoints ------------------------------------------------------------
    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False):
        """Like ``nn.Module.load_state_dict``, but a checkpoint made with another bin
        count or chunk shape fails with a message saying so."""
        bins = state_dict.get("tokenizer.bins")
        if bins is not None and int(bins) != self.config.num_bins:
            raise RuntimeError(f"checkpoint action tokenizer has num_bins={int(bins)} but this config has "
                               f"num_bins={self.config.num_bins}; use the checkpoint's num_bins or retrain")
        shape = state_dict.get("chunk_shape")
        if shape is not None and [int(v) for v in shape] != [self.action_horizon, self.action_dim]:
            h, a = (int(v) for v in shape)
            raise RuntimeError(f"checkpoint chunk is action_horizon={h} x action_dim={a} but this config has "
                               f"action_horizon={self.action_horizon} x action_dim={self.action_dim}; "
                               f"use the checkpoint's values or retrain")
        return super().load_state_dict(state_dict, strict=strict, assign=assign)

    # --- helpers ----------------------------------------------------------------
    def _action_round(self, tokens: torch.Tensor, cache: PrefixCache) -> torch.Tensor:
        """One decoding round's logits ``[B, L, num_bins]`` given the cached observation prefix."""
        return self.head(self.backbone.forward_actions(self._embed_actions(tokens), cache))

    def _embed_actions(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.action_embedding(tokens) + self.action_position

    def _logits_full(self, prefix: torch.Tensor, prefix_pad: torch.Tensor, tokens: torch.Tensor,
                     with_prefix: bool = False) -> Any:
        x = torch.cat([prefix, self._embed_actions(tokens)], dim=1)
        hidden = self.backbone(x, prefix.shape[1], prefix_pad)
        logits = self.head(hidden[:, prefix.shape[1]:])
        return (logits, hidden[:, : prefix.shape[1]]) if with_prefix else logits
