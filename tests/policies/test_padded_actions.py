"""Action steps the sampler padded at a span's cut (``action_is_pad``) are left out of the
diffusion loss: they are not the operator's actions (see robot_learn.data.sampler)."""

import torch
import torch.nn.functional as F
from policy_fixtures import stats_of, synthetic_windows, tensor_batch, tiny_config

from robot_learn.policies import make_policy
from robot_learn.policies.diffusion.modeling_diffusion import masked_mse


def test_masked_mse_averages_only_the_unpadded_steps():
    prediction, target = torch.zeros(2, 4, 3), torch.ones(2, 4, 3)
    target[0, 3] = 100.0  # a padded step with a huge error
    is_pad = torch.tensor([[False, False, False, True], [False, False, False, False]])
    assert masked_mse(prediction, target, is_pad).item() == 1.0
    assert masked_mse(prediction, target, None).item() == F.mse_loss(prediction, target).item() > 1.0
    assert masked_mse(prediction, target, torch.zeros(2, 4, dtype=torch.bool)).item() == F.mse_loss(
        prediction, target).item()


def test_diffusion_loss_uses_the_mask_and_is_unchanged_without_padding():
    windows = synthetic_windows()
    policy = make_policy("diffusion", tiny_config(prediction_type="sample"), stats_of(windows))
    batch = tensor_batch(windows, repeat=4)

    def loss(is_pad):
        torch.manual_seed(0)
        return policy.compute_loss({**batch, **({} if is_pad is None else {"action_is_pad": is_pad})})["loss"]

    no_pad = torch.zeros(batch["action"].shape[:2], dtype=torch.bool)
    assert loss(no_pad).item() == loss(None).item()
    some_pad = no_pad.clone()
    some_pad[:, -3:] = True
    assert loss(some_pad).item() != loss(None).item()
