"""An ensemble of discrete-diffusion VLAs that decodes as one policy.

K members of one config share the frozen frame encoder (its features are computed once
per observation) and are trained in one run: each takes its own share of every batch,
so the members differ in initialisation and in the windows they see. At inference every
MaskGIT round averages the members' token log-probabilities (a product of experts) and
decodes from that, so the members agree on a chunk instead of one member's draw deciding.

Why: on the six-task pixel suite, single VLAs trained from the same data differ by more
than 20 points of success depending only on the order of their training windows
(docs/benchmarks.md); averaging members removes much of that spread.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from robot_learn.policies.base import Obs, Policy
from robot_learn.policies.config_checks import check_at_least
from robot_learn.policies.discrete_diffusion.action_tokenizer import ActionTokenizer
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

    def member_config(self) -> DiscreteDiffusionConfig:
        """One member's config: this one without ``members`` and without the frame encoder,
        whose ``features`` (still in ``state_dims``) the ensemble computes once for all."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(DiscreteDiffusionConfig)}
        return DiscreteDiffusionConfig(**{**fields, "frame_encoder": {}, "frame_pretraining": {}})


def discrete_diffusion_pixels_ensemble_config(members: int = 3, **overrides: Any) -> DiscreteDiffusionEnsembleConfig:
    """``members`` VLAs of the ``discrete_diffusion_pixels`` preset (configs/policy/
    discrete_diffusion_pixels_ensemble.yaml)."""
    return DiscreteDiffusionEnsembleConfig(**discrete_diffusion_pixels_config(**overrides).__dict__, members=members)


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
        fns, batches = zip(*(m.logits_fn(obs) for m in self.members))

        def log_probs(tokens: torch.Tensor) -> torch.Tensor:
            return torch.stack([F.log_softmax(fn(tokens).float(), dim=-1) for fn in fns]).mean(dim=0)

        self.last_decode = decode_tokens(log_probs, batches[0], self.config.num_action_tokens, self.config.num_bins,
                                         self.decode_settings, generator=generator, device=self.device,
                                         keep_trace=keep_trace)
        return self.last_decode.tokens


def _rows(batch: Any, start: int, step: int) -> Any:
    """Rows ``start::step`` of every tensor and list in a (nested) training batch."""
    if isinstance(batch, Mapping):
        return {key: _rows(value, start, step) for key, value in batch.items()}
    if isinstance(batch, (torch.Tensor, list)):
        return batch[start::step]
    return batch
