"""MaskGIT decoding with secondary re-masking, and the baselines, on hand-written logits."""

import pytest
import torch

from robot_learn.policies.discrete_diffusion import DecodeSettings, decode_tokens

NUM_BINS, LENGTH = 10, 12


def random_logits(tokens):
    """A model with no opinion: fresh random logits each call."""
    return torch.randn(tokens.shape[0], tokens.shape[1], NUM_BINS)


@pytest.mark.parametrize("mode,nfe", [("maskgit", 6), ("adaptive", 6), ("parallel", 1), ("autoregressive", LENGTH)])
def test_every_token_is_committed_at_the_end_and_nfes_are_counted(mode, nfe):
    result = decode_tokens(random_logits, 3, LENGTH, NUM_BINS, DecodeSettings(mode=mode, rounds=6, remask_threshold=0.2),
                           generator=torch.Generator().manual_seed(0))
    assert result.nfe == nfe
    assert result.tokens.shape == (3, LENGTH)
    assert bool((result.tokens < NUM_BINS).all()), "a [MASK] survived decoding"


def test_maskgit_commits_progressively_following_the_cosine_schedule():
    result = decode_tokens(random_logits, 2, LENGTH, NUM_BINS, DecodeSettings(mode="adaptive", rounds=4), keep_trace=True,
                           generator=torch.Generator().manual_seed(1))
    still_masked = [int((step == NUM_BINS).sum(1).max()) for step in result.trace]
    assert still_masked == [11, 8, 4, 0]  # floor(12 cos(pi/2 k/4)), k = 1..3, then 0


def _changing_mind(tokens):
    """Position 0 is sure of bin 3 while the others are all masked, then, once any other
    is committed, sure of bin 7 (its first guess now has ~0 probability).
    The others are moderately sure of bin 1 so they commit after position 0."""
    b, n = tokens.shape
    logits = torch.zeros(b, n, NUM_BINS)
    logits[:, 1:, 1] = 2.0
    others_started = bool((tokens[:, 1:] != NUM_BINS).any())
    logits[:, 0, 7 if others_started else 3] = 12.0
    return logits


def test_secondary_remasking_revives_a_committed_token_that_lost_confidence():
    settings = dict(rounds=8, token_temperature=0.0, choice_temperature=0.0, remask_threshold=0.05, remask_margin=0.5)
    remasking = decode_tokens(_changing_mind, 1, 4, NUM_BINS, DecodeSettings(mode="maskgit", **settings), keep_trace=True)
    frozen = decode_tokens(_changing_mind, 1, 4, NUM_BINS, DecodeSettings(mode="adaptive", **settings), keep_trace=True)
    assert remasking.trace[0][0, 0] == 3  # committed first, as the most confident
    assert frozen.tokens[0, 0] == 3  # without re-masking the stale token stays
    assert remasking.remasked >= 1
    assert remasking.tokens[0, 0] == 7  # re-masked and decoded again
    assert remasking.tokens[0, 1:].tolist() == [1, 1, 1]


def test_margin_confidence_is_the_top1_top2_gap():
    def two_way(tokens):
        logits = torch.full((tokens.shape[0], tokens.shape[1], NUM_BINS), -30.0)
        logits[:, :, 0] = 0.0
        logits[:, :, 1] = torch.linspace(-2, 2, tokens.shape[1])  # later positions are less decided near 0
        return logits
    result = decode_tokens(two_way, 1, 5, NUM_BINS, DecodeSettings(mode="adaptive", rounds=2, confidence="margin",
                                                                   token_temperature=0.0, choice_temperature=0.0),
                           keep_trace=True)
    # After round 1, floor(5 cos(pi/4)) = 3 stay masked: the three with the smallest |gap| (positions 1, 2, 3).
    assert (result.trace[0][0] == NUM_BINS).tolist() == [False, True, True, True, False]


def test_unknown_decoding_mode_names_the_valid_ones():
    with pytest.raises(ValueError, match="unknown decoding 'beam'; valid choices: maskgit, adaptive, parallel, autoregressive"):
        DecodeSettings(mode="beam")


def test_a_logits_function_of_the_wrong_shape_is_reported():
    with pytest.raises(ValueError, match=r"must return \[1, 4, 10\]"):
        decode_tokens(lambda t: torch.zeros(1, 4, 11), 1, 4, NUM_BINS, DecodeSettings(mode="parallel"))
