"""RETAIN weight merging between a base and a fine-tuned policy."""

import pytest
import torch
from policy_fixtures import tiny_config

from robot_learn.policies import make_policy
from robot_learn.policies.merging import merge_policies


def pair(stats):
    torch.manual_seed(0)
    base = make_policy("diffusion", tiny_config(), stats)
    torch.manual_seed(1)
    finetuned = make_policy("diffusion", tiny_config(), stats)
    return base, finetuned


def test_merge_interpolates_every_parameter_by_alpha(stats):
    base, ft = pair(stats)
    merged = merge_policies(base, ft, 0.25)
    for (name, m), b, f in zip(merged.named_parameters(), base.parameters(), ft.parameters()):
        torch.testing.assert_close(m, 0.75 * b + 0.25 * f, msg=name)
    assert all(torch.equal(a, b) for a, b in zip(merge_policies(base, ft, 0.0).parameters(), base.parameters()))
    assert all(torch.equal(a, b) for a, b in zip(merge_policies(base, ft, 1.0).parameters(), ft.parameters()))


def test_alpha_per_module_takes_the_longest_matching_prefix(stats):
    base, ft = pair(stats)
    merged = merge_policies(base, ft, {"default": 1.0, "obs_encoder": 0.0, "obs_encoder.state_encoder.mlp.0": 0.5})
    params = dict(merged.named_parameters())
    b, f = dict(base.named_parameters()), dict(ft.named_parameters())
    torch.testing.assert_close(params["obs_encoder.state_encoder.mlp.0.weight"],
                               0.5 * b["obs_encoder.state_encoder.mlp.0.weight"]
                               + 0.5 * f["obs_encoder.state_encoder.mlp.0.weight"])
    assert torch.equal(params["obs_encoder.state_encoder.mlp.2.weight"], b["obs_encoder.state_encoder.mlp.2.weight"])
    denoiser = next(n for n in params if n.startswith("denoiser."))
    assert torch.equal(params[denoiser], f[denoiser])


def test_merging_policies_of_different_architectures_is_a_clear_error(stats):
    base = make_policy("diffusion", tiny_config(), stats)
    wider = make_policy("diffusion", tiny_config(state_hidden_dims=[48]), stats)
    with pytest.raises(ValueError, match=r"cannot merge policies of different architectures: parameter "
                                         r"obs_encoder.state_encoder.mlp.0.weight has shape \(32, 7\) in the base, "
                                         r"\(48, 7\) fine-tuned"):
        merge_policies(base, wider, 0.5)
    deeper = make_policy("diffusion", tiny_config(state_hidden_dims=[32, 32]), stats)
    with pytest.raises(ValueError, match="cannot merge policies of different architectures: parameter"):
        merge_policies(base, deeper, 0.5)


def test_bad_alpha_is_a_clear_error(stats):
    base, ft = pair(stats)
    with pytest.raises(ValueError, match=r"merge alpha must lie in \[0, 1\]; got \{'default': 1.5\}"):
        merge_policies(base, ft, 1.5)
    with pytest.raises(ValueError, match=r"merge alpha names modules \['encoder'\] that the policy lacks; its "
                                         r"modules: .*obs_encoder"):
        merge_policies(base, ft, {"encoder": 0.5})
