"""An ensemble of discrete-diffusion VLAs that decodes as one policy.

K members of one config share the frozen frame encoder (its features are computed once
per observation) and are trained in one run: each takes its own share of every batch,
so the members differ in initialisation and in the windows they see. At inference every
MaskGIT round averages the members' token log-probabilities (a product of experts) and
decodes from that, so the members agree on a chunk instead of one member's draw deciding.
``from_members`` combines VLAs trained apart (same config and encoder weights);
``member_policy(k)`` gives one member back as a policy of its own.

Why: on the six-task pixel suite, single VLAs trained from the same data differ by more
than 20 points of success depending only on the order of their training windows
(docs/benchmarks.md); averaging members removes much of that spread.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from robot_learn.policies.base import Obs, Policy
from robot_learn.policies.compiled_call import CompiledCall
from robot_learn.policies.config_checks import check_at_least
from robot_learn.policies.discrete_diffusion.action_tokenizer import ActionTokenizer
from robot_learn.policies.discrete_diffusion.backbone import PrefixCache
from robot_learn.policies.discrete_diffusion.configuration_discrete_diffusion import (
    DiscreteDiffusionConfig,
    discrete_diffusion_pixels_config,
)
from robot_learn.policies.discrete_diffusion.decoding import DecodeResult, decode_tokens
from robot_learn.policies.discrete_diffusion.modeling_discrete_diffusion import DiscreteDiffusionPolicy, with_vocab
from robot_learn.policies.registry import register_policy

Stats = Mapping[str, Mapping[str, Any]]


@dataclass
class DiscreteDiffusionEnsembleConfig(DiscreteDiffusionConfig):
    """A :class:`DiscreteDiffusionConfig` for every member, plus how many members."""

    members: int = 3

    def validate(self) -> None:
        super().validate()
        check_at_least(self, ("members",), 1)

    @classmethod
    def of(cls, member: DiscreteDiffusionConfig, members: int) -> DiscreteDiffusionEnsembleConfig:
        """``members`` VLAs of config ``member``."""
        fields = {f.name: getattr(member, f.name) for f in dataclasses.fields(DiscreteDiffusionConfig)}
        return cls(**fields, members=members)

    def member_config(self) -> DiscreteDiffusionConfig:
        """One member's config: this one without ``members`` and without the frame encoder,
        whose ``features`` (still in ``state_dims``) the ensemble computes once for all."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(DiscreteDiffusionConfig)}
        return DiscreteDiffusionConfig(**{**fields, "frame_encoder": {}, "frame_pretraining": {}})


def discrete_diffusion_pixels_ensemble_config(members: int = 3, **overrides: Any) -> DiscreteDiffusionEnsembleConfig:
    """``members`` VLAs of the ``discrete_diffusion_pixels`` preset (configs/policy/
    discrete_diffusion_pixels_ensemble.yaml)."""
    return DiscreteDiffusionEnsembleConfig.of(discrete_diffusion_pixels_config(**overrides), members)


@register_policy
class DiscreteDiffusionEnsemble(Policy):
    """``config.members`` :class:`DiscreteDiffusionPolicy` members decoded together."""

    name = "discrete_diffusion_ensemble"
    config_class = DiscreteDiffusionEnsembleConfig

    def __init__(self, config: DiscreteDiffusionEnsembleConfig, stats: Stats | None = None,
                 instructions: Iterable[str] | None = None) -> None:
        config = with_vocab(config, instructions)
        super().__init__(config)  # the shared frame encoder, if the config has one
        member = config.member_config()
        self.members = nn.ModuleList(DiscreteDiffusionPolicy(member, stats) for _ in range(config.members))
        self.decode_settings = DiscreteDiffusionPolicy._settings_from(config)
        self.last_decode: DecodeResult | None = None
        self.compiled_round = CompiledCall(self._mean_log_probs, "the ensemble's decoding round")

    @classmethod
    def from_members(cls, policies: Sequence[DiscreteDiffusionPolicy]) -> DiscreteDiffusionEnsemble:
        """An ensemble of separately trained VLAs of one config whose frame encoders (if any)
        hold the same weights; ValueError naming the first member that differs."""
        first = policies[0]
        encoder = {} if first.frame_encoder is None else first.frame_encoder.state_dict()
        for k, other in enumerate(policies[1:], start=1):
            if other.name != "discrete_diffusion" or other.config != first.config:
                fields = [f.name for f in dataclasses.fields(first.config)
                          if getattr(first.config, f.name) != getattr(other.config, f.name, None)]
                raise ValueError(f"ensemble member {k} ('{other.name}') differs from member 0 in {fields or 'type'}")
            theirs = {} if other.frame_encoder is None else other.frame_encoder.state_dict()
            if any(not torch.equal(value, theirs[name]) for name, value in encoder.items()):
                raise ValueError(f"ensemble member {k}'s frame encoder has other weights than member 0's; "
                                 f"members must share one encoder")
        ensemble = cls(DiscreteDiffusionEnsembleConfig.of(first.config, len(policies)))
        if ensemble.frame_encoder is not None:
            ensemble.frame_encoder.load_state_dict(encoder)
        for member, policy in zip(ensemble.members, policies):
            member.load_state_dict({n: v for n, v in policy.state_dict().items() if not n.startswith("frame_encoder.")})
        return ensemble.eval()

    def member_policy(self, k: int) -> DiscreteDiffusionPolicy:
        """Member ``k`` as a policy of its own, with a copy of the shared frame encoder."""
        config = self.config.member_config().with_changes(frame_encoder=self.config.frame_encoder,
                                                          frame_pretraining=self.config.frame_pretraining)
        alone = DiscreteDiffusionPolicy(config)
        encoder = {} if self.frame_encoder is None else self.frame_encoder.state_dict()
        alone.load_state_dict({**self.members[k].state_dict(), **{f"frame_encoder.{n}": v for n, v in encoder.items()}})
        return alone.to(self.device).eval()

    @property
    def tokenizer(self) -> ActionTokenizer:
        """The action tokenizer (the members' are built from the same statistics)."""
        return self.members[0].tokenizer

    @property
    def last_nfe(self) -> int:
        """Network evaluations of each member for the latest chunk (0 before any)."""
        return 0 if self.last_decode is None else self.last_decode.nfe

    # The member class's decoding helpers read only decode_settings, tokenizer and
    # predict_tokens, which the ensemble has too: it reuses them rather than repeat them.
    def set_decoding(self, mode: str | None = None, rounds: int | None = None, **settings: Any) -> None:
        """Switch the decoding mode / rounds / other decode knobs of the ensemble."""
        DiscreteDiffusionPolicy.set_decoding(self, mode, rounds, **settings)

    def set_compile_inference(self, enabled: bool) -> None:
        """Switch ``compile_inference``: the shared frame encoder and the members' rounds (one graph)."""
        self.config = self.config.with_changes(compile_inference=bool(enabled))
        for member in self.members:
            member.set_compile_inference(enabled)

    def _mean_log_probs(self, tokens: torch.Tensor, caches: Sequence[PrefixCache]) -> torch.Tensor:
        """One round of every member (each against its own cached prefix), log-probabilities averaged."""
        return _mean_log_probs(m._action_round(tokens, cache) for m, cache in zip(self.members, caches))

    def trace_log_probs(self, obs: Obs, trace: torch.Tensor, temperature: float = 1.0
                        ) -> tuple[torch.Tensor, torch.Tensor]:
        """As :meth:`DiscreteDiffusionPolicy.trace_log_probs`, under the distribution the ensemble
        samples each round from: the softmax of the members' mean log-probabilities at
        ``temperature``. Differentiable through every member (and a trainable frame encoder),
        so GRPO can fine-tune an ensemble."""
        first = self.members[0]
        inputs, committed = first._checked_rounds(trace, temperature)
        obs = self.with_frame_features(obs)  # once for all members
        mean = _mean_log_probs(m.round_logits(obs, inputs) for m in self.members)
        return first._picked(torch.log_softmax(mean / temperature, dim=-1), trace, committed), committed

    # --- training ---------------------------------------------------------------
    def compute_loss(self, batch: Mapping[str, Any]) -> dict[str, torch.Tensor]:
        """The members' mean loss, member ``k`` of ``K`` on rows ``k, k + K, k + 2K, ...`` of
        the batch; the other metrics are the members' means too."""
        rows = len(self._batch_actions(batch))
        if rows < len(self.members):
            raise ValueError(f"a batch of {rows} windows cannot give each of {len(self.members)} ensemble members "
                             f"its own share; use batch_size >= {len(self.members)}")
        batch = {**batch, "obs": self.with_frame_features(self._obs_from_batch(batch))}
        outs = [m.compute_loss(_rows(batch, k, len(self.members))) for k, m in enumerate(self.members)]
        return {key: torch.stack([out[key] for out in outs]).mean() for key in outs[0]}

    # --- inference --------------------------------------------------------------
    @torch.no_grad()
    def predict_action_chunk(self, obs: Obs, generator: torch.Generator | None = None) -> torch.Tensor:
        """Decode an unnormalised chunk ``[B, action_horizon, A]`` (bin centres)."""
        return DiscreteDiffusionPolicy.predict_action_chunk(self, obs, generator)

    @torch.no_grad()
    def predict_tokens(self, obs: Obs, generator: torch.Generator | None = None, keep_trace: bool = False) -> torch.Tensor:
        """Decoded action tokens ``[B, L]`` from the members' mean log-probabilities per round."""
        obs = self.with_frame_features(obs)
        if self.config.compile_inference and all(m.prefix_cached for m in self.members):
            caches = [m.prefix_cache(obs) for m in self.members]
            batch = caches[0][1].shape[0]

            def log_probs(tokens: torch.Tensor) -> torch.Tensor:  # all members in one compiled graph
                return self.compiled_round(tokens, caches)
        else:
            self.members[0].warn_if_rounds_stay_eager(self.config.compile_inference)  # once for the ensemble
            fns, batches = zip(*(m.logits_fn(obs, warn=False) for m in self.members))
            batch = batches[0]

            def log_probs(tokens: torch.Tensor) -> torch.Tensor:
                return _mean_log_probs(fn(tokens) for fn in fns)

        self.last_decode = decode_tokens(log_probs, batch, self.config.num_action_tokens, self.config.num_bins,
                                         self.decode_settings, generator=generator, device=self.device,
                                         keep_trace=keep_trace)
        return self.last_decode.tokens


def _mean_log_probs(logits: Iterable[torch.Tensor]) -> torch.Tensor:
    """The members' token log-probabilities averaged (the product of experts, unnormalised)."""
    return torch.stack([F.log_softmax(x.float(), dim=-1) for x in logits]).mean(dim=0)


def _rows(batch: Any, start: int, step: int) -> Any:
    """Rows ``start::step`` of every tensor and list in a (nested) training batch."""
    if isinstance(batch, Mapping):
        return {key: _rows(value, start, step) for key, value in batch.items()}
    if isinstance(batch, (torch.Tensor, list)):
        return batch[start::step]
    return batch
