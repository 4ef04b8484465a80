"""Action tokenizer and cosine masking schedule."""

import numpy as np
import pytest
import torch

from robot_learn.policies.discrete_diffusion import ActionTokenizer, mask_ratio, masked_count_after_round, sample_training_mask


def _stats(low, high):
    return {"q01": np.asarray(low, np.float32), "q99": np.asarray(high, np.float32)}


def test_decode_of_encode_is_within_half_a_bin_of_the_clipped_action():
    tokenizer = ActionTokenizer(3, num_bins=256, stats=_stats([-0.2, 0.0, 10.0], [0.4, 1.0, 30.0]))
    actions = torch.rand(1000, 3) * torch.tensor([1.0, 1.4, 30.0]) + torch.tensor([-0.4, -0.2, 5.0])
    tokens, _ = tokenizer.encode(actions)
    decoded = tokenizer.decode(tokens)
    clipped = torch.minimum(torch.maximum(actions, tokenizer.low), tokenizer.high)
    error = (decoded - clipped).abs()
    assert bool((error <= tokenizer.bin_width / 2 + 1e-5).all())
    assert int(tokens.min()) >= 0 and int(tokens.max()) <= 255


def test_values_outside_q01_q99_are_clipped_to_the_end_bins_and_counted():
    tokenizer = ActionTokenizer(1, num_bins=16, stats=_stats([0.0], [1.0]))
    tokens, clipped = tokenizer.encode(torch.tensor([[-5.0], [0.5], [1.0], [7.0]]))
    assert tokens.squeeze(-1).tolist() == [0, 8, 15, 15]
    assert clipped.squeeze(-1).tolist() == [True, False, False, True]


def test_the_mask_token_cannot_be_decoded():
    tokenizer = ActionTokenizer(2, num_bins=8)
    assert tokenizer.mask_id == 8 and tokenizer.vocab_size == 9
    with pytest.raises(ValueError, match=r"\[MASK\] = 8"):
        tokenizer.decode(torch.tensor([[8, 0]]))


def test_stats_without_percentiles_are_rejected_with_the_keys_named():
    with pytest.raises(ValueError, match=r"lack \['q01', 'q99'\].*min"):
        ActionTokenizer(2, stats={"min": np.zeros(2), "max": np.ones(2)})
    with pytest.raises(ValueError, match="num_bins must be >= 2, got 1"):
        ActionTokenizer(2, num_bins=1)


def test_a_constant_action_dimension_does_not_divide_by_zero():
    tokenizer = ActionTokenizer(1, num_bins=8, stats=_stats([0.5], [0.5]))
    tokens, clipped = tokenizer.encode(torch.tensor([[0.5]]))
    assert torch.isfinite(tokenizer.decode(tokens)).all()
    assert abs(float(tokenizer.decode(tokens)) - 0.5) < 1e-4 and not bool(clipped.any())


def test_mask_schedule_masks_everything_at_t1_and_nothing_at_t0():
    assert float(mask_ratio(1.0)) == 1.0
    assert float(mask_ratio(0.0)) == 0.0
    ratios = mask_ratio(torch.linspace(0, 1, 101))
    assert bool((ratios[1:] >= ratios[:-1]).all())
    with pytest.raises(ValueError, match="must be in"):
        mask_ratio(1.5)


def test_decoding_schedule_leaves_fewer_masked_each_round_and_none_after_the_last():
    counts = [masked_count_after_round(k, 12, 40) for k in range(12)]
    assert counts[-1] == 0
    assert all(1 <= c <= 39 for c in counts[:-1])
    assert counts == sorted(counts, reverse=True)


def test_training_mask_masks_at_least_one_token_and_covers_the_whole_range():
    mask = sample_training_mask(2000, 40, generator=torch.Generator().manual_seed(0))
    counts = mask.sum(1)
    assert int(counts.min()) >= 1 and int(counts.max()) == 40
    # E[cos(pi/2 (1 - t))] over t ~ U(0, 1) is 2/pi.
    assert abs(float(counts.float().mean()) / 40 - 2 / np.pi) < 0.03


def test_hl_gauss_targets_are_distributions_peaked_on_the_true_bin():
    tokenizer = ActionTokenizer(2, num_bins=64, stats=_stats([0.0, -1.0], [1.0, 1.0]))
    actions = torch.rand(500, 2) * torch.tensor([1.0, 2.0]) + torch.tensor([0.0, -1.0])
    tokens, _ = tokenizer.encode(actions)
    soft = tokenizer.soft_targets(actions, sigma_bins=1.5)
    assert soft.shape == (500, 2, 64)
    torch.testing.assert_close(soft.sum(-1), torch.ones(500, 2))
    assert (soft.argmax(-1) - tokens).abs().max() <= 1  # ties at bin edges may pick the neighbour
    # Mass spreads to neighbours and decays with distance; a narrow Gaussian is nearly one-hot.
    row = soft[0, 0]
    peak = int(row.argmax())
    assert 0 < float(row[min(peak + 1, 63)]) < float(row[peak]) and float(row[(peak + 10) % 64]) < 1e-6
    narrow = tokenizer.soft_targets(actions, sigma_bins=0.05)
    centred = (actions[:, 0] - (tokens[:, 0].float() + 0.5) / 64).abs() < 0.25 / 64  # well inside a bin
    assert bool((narrow[centred, 0].max(-1).values > 0.99).all())
