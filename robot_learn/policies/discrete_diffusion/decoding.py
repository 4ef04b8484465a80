"""Decoding a chunk of action tokens from a masked-token model.

``logits_fn(tokens [B, L]) -> logits [B, L, num_bins]`` is one network evaluation
(NFE); [MASK] is id ``num_bins``. Modes:

- ``maskgit`` (Discrete Diffusion VLA): start all masked. Each of K rounds samples
  every masked position, scores it (probability of the sampled token, or its
  margin over the best other token), keeps the most confident and re-masks the
  rest so that floor(L cos(pi/2 (k+1)/K)) stay masked, choosing by log-confidence
  plus Gumbel noise whose temperature anneals as tau (1 - (k+1)/K). Secondary
  re-masking: a committed token whose confidence under the current model falls
  below ``remask_threshold``, or has dropped by more than ``remask_margin`` since
  it was committed, is masked again. The last round commits everything.
- ``adaptive``: the same without secondary re-masking (committed tokens are final).
- ``parallel``: one pass, every token at once.
- ``autoregressive``: L passes, one token per pass from left to right.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from robot_learn.policies.config_checks import check_at_least, check_choice
from robot_learn.policies.discrete_diffusion.configuration_discrete_diffusion import CONFIDENCES, DECODINGS
from robot_learn.policies.discrete_diffusion.mask_schedule import masked_count_after_round

LogitsFn = Callable[[torch.Tensor], torch.Tensor]


@dataclass
class DecodeResult:
    """Decoded tokens ``[B, L]``, the network evaluations used, and how many committed
    tokens secondary re-masking sent back (summed over the batch)."""

    tokens: torch.Tensor
    nfe: int
    remasked: int = 0
    trace: list[torch.Tensor] = field(default_factory=list)  # tokens after each round


@dataclass
class DecodeSettings:
    """Knobs of :func:`decode_tokens` (mirrors the policy config fields)."""

    mode: str = "maskgit"
    rounds: int = 12
    confidence: str = "prob"
    token_temperature: float = 1.0
    choice_temperature: float = 1.0
    remask_threshold: float = 0.05
    remask_margin: float = 0.5

    def __post_init__(self) -> None:
        check_choice("decoding", self.mode, DECODINGS)
        check_choice("confidence", self.confidence, CONFIDENCES)
        check_at_least(self, ("rounds",), 1)


def decode_tokens(
    logits_fn: LogitsFn,
    batch: int,
    length: int,
    num_bins: int,
    settings: DecodeSettings,
    generator: torch.Generator | None = None,
    device: torch.device | str = "cpu",
    keep_trace: bool = False,
) -> DecodeResult:
    """Decode ``[batch, length]`` tokens with ``settings.mode`` (see the module docstring)."""
    mask_id = num_bins
    tokens = torch.full((batch, length), mask_id, dtype=torch.long, device=device)
    rng = _Noise(generator, device)
    if settings.mode == "parallel":
        logits = _checked(logits_fn(tokens), batch, length, num_bins)
        tokens = _sample(logits, settings.token_temperature, rng)
        return DecodeResult(tokens, nfe=1, trace=[tokens.clone()] if keep_trace else [])
    if settings.mode == "autoregressive":
        trace = []
        for i in range(length):
            logits = _checked(logits_fn(tokens), batch, length, num_bins)
            tokens = tokens.clone()
            tokens[:, i] = _sample(logits[:, i : i + 1], settings.token_temperature, rng)[:, 0]
            if keep_trace:
                trace.append(tokens.clone())
        return DecodeResult(tokens, nfe=length, trace=trace)
    return _maskgit(logits_fn, tokens, num_bins, settings, rng, keep_trace)


def round_commits(trace: torch.Tensor, mask_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """What each decoding round saw and what it committed, from a trace ``[B, K, L]``
    (tokens after each of K rounds, ``DecodeResult.trace`` stacked on dim 1).

    Returns ``inputs [B, K, L]`` (round k's input: all [MASK] for k = 0, else the tokens
    after round k-1) and ``committed [B, K, L]`` (masked in round k's input and not masked
    after it: the tokens round k sampled and kept, whose values are ``trace[:, k]``). A
    token re-masked later and sampled again counts in both rounds that committed it.
    """
    if trace.ndim != 3:
        raise ValueError(f"trace must be [B, K, L] token ids, got shape {tuple(trace.shape)}")
    first = torch.full_like(trace[:, :1], mask_id)
    inputs = torch.cat([first, trace[:, :-1]], dim=1)
    committed = (inputs == mask_id) & (trace != mask_id)
    return inputs, committed


def _maskgit(logits_fn: LogitsFn, tokens: torch.Tensor, num_bins: int, s: DecodeSettings, rng: "_Noise",
             keep_trace: bool) -> DecodeResult:
    batch, length = tokens.shape
    mask_id = num_bins
    commit_conf = torch.zeros(batch, length, device=tokens.device)
    remask = s.mode == "maskgit"
    remasked_total = 0
    trace = []
    for k in range(s.rounds):
        logits = _checked(logits_fn(tokens), batch, length, num_bins)
        probs = torch.softmax(logits.float(), dim=-1)
        masked = tokens == mask_id
        sampled = _sample(logits, s.token_temperature, rng)
        candidate = torch.where(masked, sampled, tokens)
        # Confidence of every candidate under the current model: new samples and committed tokens alike.
        conf = _confidence(probs, candidate, s.confidence)

        last = k == s.rounds - 1
        flagged = torch.zeros_like(masked)
        if remask and not last:
            dropped = (commit_conf - conf) > s.remask_margin
            flagged = ~masked & ((conf < s.remask_threshold) | dropped)
            remasked_total += int(flagged.sum())

        n_masked = masked_count_after_round(k, s.rounds, length)
        # Lowest score is masked: committed tokens are kept (+inf) unless flagged (-inf);
        # new samples compete on log-confidence plus annealed Gumbel noise.
        tau = s.choice_temperature * (1.0 - (k + 1) / s.rounds)
        score = torch.log(conf.clamp_min(1e-12)) + tau * rng.gumbel((batch, length))
        score = torch.where(masked, score, torch.full_like(score, float("inf")))
        score = torch.where(flagged, torch.full_like(score, float("-inf")), score)
        per_row = torch.clamp(flagged.sum(1), min=n_masked)  # flagged tokens are masked whatever the schedule says
        ranks = score.argsort(dim=1).argsort(dim=1)
        new_mask = ranks < per_row[:, None]

        newly_committed = masked & ~new_mask
        commit_conf = torch.where(newly_committed, conf, commit_conf)
        tokens = torch.where(new_mask, torch.full_like(candidate, mask_id), candidate)
        if keep_trace:
            trace.append(tokens.clone())
    return DecodeResult(tokens, nfe=s.rounds, remasked=remasked_total, trace=trace)


def _confidence(probs: torch.Tensor, tokens: torch.Tensor, kind: str) -> torch.Tensor:
    """``prob``: p(token). ``margin``: p(token) minus the best other token's probability
    (for the argmax token this is the top1 - top2 gap)."""
    p = probs.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
    if kind == "prob":
        return p
    others = probs.scatter(-1, tokens.unsqueeze(-1), float("-inf")).amax(-1)
    return p - others


def _sample(logits: torch.Tensor, temperature: float, rng: "_Noise") -> torch.Tensor:
    if temperature <= 0:
        return logits.argmax(-1)
    # Gumbel-max: argmax(logits / T + g) is a sample of softmax(logits / T).
    return (logits.float() / temperature + rng.gumbel(tuple(logits.shape))).argmax(-1)


def _checked(logits: torch.Tensor, batch: int, length: int, num_bins: int) -> torch.Tensor:
    if tuple(logits.shape) != (batch, length, num_bins):
        raise ValueError(f"logits_fn must return [{batch}, {length}, {num_bins}], got {tuple(logits.shape)}")
    return logits


class _Noise:
    """Gumbel noise from an optional generator (on its own device), moved to ``device``."""

    def __init__(self, generator: torch.Generator | None, device: torch.device | str) -> None:
        self.generator = generator
        self.device = torch.device(device)

    def gumbel(self, shape: tuple[int, ...]) -> torch.Tensor:
        where = self.generator.device if self.generator is not None else self.device
        u = torch.rand(shape, generator=self.generator, device=where).clamp_(1e-10, 1.0 - 1e-7)
        return (-torch.log(-torch.log(u))).to(self.device)
