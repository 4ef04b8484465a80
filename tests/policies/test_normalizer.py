import numpy as np
import pytest
import torch

from robot_learn.policies import MinMaxNormalizer


def _stats(low, high):
    return {"min": np.asarray(low, np.float32), "max": np.asarray(high, np.float32)}


def test_stats_range_maps_to_minus_one_one_and_back():
    norm = MinMaxNormalizer(2, _stats([0.0, -5.0], [2.0, 15.0]))
    x = torch.tensor([[0.0, -5.0], [2.0, 15.0], [1.0, 5.0]])
    y = norm.normalize(x)
    assert torch.allclose(y, torch.tensor([[-1.0, -1.0], [1.0, 1.0], [0.0, 0.0]]))
    assert torch.allclose(norm.unnormalize(y), x)


def test_constant_feature_maps_to_zero_without_inf_and_inverts():
    norm = MinMaxNormalizer(2, _stats([0.0, 3.0], [1.0, 3.0]))
    y = norm.normalize(torch.tensor([[0.5, 3.0]]))
    assert torch.isfinite(y).all()
    assert y[0, 1].item() == 0.0
    assert torch.allclose(norm.unnormalize(y), torch.tensor([[0.5, 3.0]]))


def test_bounds_are_buffers_saved_with_weights_not_parameters():
    norm = MinMaxNormalizer(3, _stats([0, 0, 0], [1, 2, 4]))
    assert list(norm.parameters()) == []
    assert set(norm.state_dict()) == {"centre", "scale"}
    fresh = MinMaxNormalizer(3)
    fresh.load_state_dict(norm.state_dict())
    x = torch.rand(5, 3)
    assert torch.equal(fresh.normalize(x), norm.normalize(x))


def test_stats_with_wrong_feature_count_name_the_key():
    with pytest.raises(ValueError, match="'action' have 3 features but the policy expects 2"):
        MinMaxNormalizer(2, _stats([0, 0, 0], [1, 1, 1]), name="action")


def test_stats_without_min_are_rejected():
    with pytest.raises(ValueError, match=r"lack \['min'\]"):
        MinMaxNormalizer(1, {"max": np.ones(1, np.float32)})


def test_input_with_wrong_feature_count_is_rejected():
    with pytest.raises(ValueError, match="expects 2 features"):
        MinMaxNormalizer(2).normalize(torch.zeros(4, 3))
