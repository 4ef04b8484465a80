"""The MIP head of the diffusion policy: two noiseless passes of one network, trained on
MIP's two-point loss, on both denoisers; and the errors for mixing it up with the
diffusion head's samplers."""

import pytest
import torch
from policy_fixtures import stats_of, synthetic_windows, tensor_batch, tiny_config

from robot_learn.policies import DiffusionConfig, load_policy, make_policy
from robot_learn.policies.diffusion.mip_head import TIME_SCALE

DENOISERS = ["unet", "transformer"]


def _mip_policy(stats, **changes):
    torch.manual_seed(0)
    return make_policy("diffusion", tiny_config(head="mip", **changes), stats).eval()


def _record_calls(denoiser):
    """The (sample, timesteps) of every forward call of the real denoiser, and its outputs."""
    calls = []
    denoiser.register_forward_hook(lambda module, args, output: calls.append((args[0].clone(), args[1].clone(),
                                                                              output.clone())))
    return calls


@pytest.mark.parametrize("denoiser", DENOISERS)
def test_inference_calls_the_network_exactly_twice_and_draws_no_noise(stats, windows, denoiser):
    policy = _mip_policy(stats, denoiser=denoiser)
    calls = _record_calls(policy.denoiser)
    obs = tensor_batch(windows)["obs"]
    first = policy.predict_action_chunk(obs, generator=torch.Generator().manual_seed(1))
    assert len(calls) == 2
    (x0, t0, out0), (x1, t1, _) = calls
    assert torch.equal(x0, torch.zeros_like(x0)) and torch.equal(t0, torch.zeros_like(t0))  # f(0, 0, o)
    assert torch.equal(x1, out0.float())                                                    # f(t*, â, o)
    assert torch.allclose(t1, torch.full_like(t1, 0.9 * TIME_SCALE))
    second = policy.predict_action_chunk(obs, generator=torch.Generator().manual_seed(2))
    assert len(calls) == 4
    assert torch.equal(first, second)  # another seed, same chunk: no noise anywhere


@pytest.mark.parametrize(("denoiser", "steps", "max_mean_error"), [("unet", 60, 0.02), ("transformer", 150, 0.12)])
def test_training_on_four_fixed_windows_reduces_the_mip_loss(denoiser, steps, max_mean_error):
    windows = synthetic_windows()
    stats = stats_of(windows)
    policy = _mip_policy(stats, denoiser=denoiser).train()
    obs, target = tensor_batch(windows)["obs"], torch.from_numpy(windows["action"])
    span = torch.from_numpy(stats["action"]["max"] - stats["action"]["min"])

    def mean_error() -> float:
        policy.eval()
        error = ((policy.predict_action_chunk(obs) - target).abs() / span).mean().item()
        policy.train()
        return error

    untrained_error = mean_error()
    optimiser = torch.optim.AdamW(policy.parameters(), lr=2e-3, weight_decay=0.0)
    batch = tensor_batch(windows, repeat=4)
    losses = []
    for _ in range(steps):
        out = policy.compute_loss(batch)
        optimiser.zero_grad()
        out["loss"].backward()
        optimiser.step()
        losses.append(out["loss"].item())
    assert {"mip_first_pass", "mip_second_pass"} <= set(out)
    start, end = sum(losses[:5]) / 5, sum(losses[-10:]) / 10
    assert end < 0.1 * start, f"{denoiser}: MIP loss {start:.4f} -> {end:.4f}"
    trained_error = mean_error()
    assert trained_error < max_mean_error and trained_error < 0.5 * untrained_error, (untrained_error, trained_error)


@pytest.mark.parametrize("denoiser", DENOISERS)
def test_save_and_load_give_identical_actions(stats, windows, tmp_path, denoiser):
    policy = _mip_policy(stats, denoiser=denoiser)
    policy.save(tmp_path / "mip")
    loaded = load_policy(tmp_path / "mip", "diffusion")
    assert loaded.config.head == "mip" and loaded.config.mip_t_star == 0.9
    obs = tensor_batch(windows)["obs"]
    assert torch.equal(policy.predict_action_chunk(obs), loaded.predict_action_chunk(obs))


def test_a_mip_checkpoint_refuses_a_diffusion_sampler_naming_both(stats, tmp_path):
    _mip_policy(stats).save(tmp_path / "mip")
    loaded = load_policy(tmp_path / "mip")
    with pytest.raises(ValueError, match=r"sampler 'ddim' needs a policy trained with head 'diffusion', but this "
                                         r"policy's head is 'mip'") as error:
        loaded.set_inference_scheduler("ddim", 10)
    assert "\n" not in str(error.value)
    loaded.set_inference_scheduler("mip")  # its own way to predict is accepted
    with pytest.raises(ValueError, match="head 'mip' always runs 2 passes, got num_inference_steps=5"):
        loaded.set_inference_scheduler("mip", 5)


def test_a_diffusion_checkpoint_refuses_the_mip_passes_naming_both(stats, tmp_path):
    make_policy("diffusion", tiny_config(), stats).save(tmp_path / "diffusion")
    loaded = load_policy(tmp_path / "diffusion")
    with pytest.raises(ValueError, match=r"sampler 'mip' needs a policy trained with head 'mip' \(policy.head=mip\), "
                                         r"but this policy's head is 'diffusion'; its samplers: ddpm, ddim, dpmsolver"):
        loaded.set_inference_scheduler("mip")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (dict(head="flow"), "unknown head 'flow'; valid choices: diffusion, mip"),
        (dict(inference_scheduler="mip"), "inference_scheduler 'mip': MIP is a head .* set head='mip'"),
        (dict(head="mip", mip_t_star=1.0), "mip_t_star must be strictly between 0 and 1, got 1.0"),
    ],
)
def test_bad_head_settings_are_named_with_valid_choices(changes, message):
    with pytest.raises(ValueError, match=message):
        DiffusionConfig(**changes)


def test_loss_and_prediction_work_under_bf16_autocast(stats, windows):
    policy = _mip_policy(stats, denoiser="transformer")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = policy.compute_loss(tensor_batch(windows))["loss"]
        chunk = policy.predict_action_chunk(tensor_batch(windows)["obs"])
    assert torch.isfinite(loss) and chunk.dtype == torch.float32 and torch.isfinite(chunk).all()
