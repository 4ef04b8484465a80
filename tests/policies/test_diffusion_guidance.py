"""The sampler's guidance hook: x0_hat, the objective's gradient, back to the model output,
then the real diffusers scheduler steps (DDIM and DPM-Solver)."""

import pytest
import torch
from steering_fixtures import TARGET, TO, end_distance, observations, pose_policy, seeded

from robot_learn.policies.diffusion.guidance import Guidance, output_for_clean, predicted_clean
from robot_learn.policies.steering_objectives import PointObjective

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def point(action_dim=5):
    return PointObjective(TARGET, action_dim=action_dim, start=TO - 1)


def plain_scheduler_loop(policy, obs, generator):
    """Sampling as the policy did before the hook: noise, the scheduler's steps, clip, unnormalise."""
    features, text = policy.encode(obs)
    sample = torch.randn((features.shape[0], policy.action_horizon, policy.action_dim), generator=generator)
    policy.sampler.set_timesteps(policy.num_inference_steps)
    for t in policy.sampler.timesteps:
        output = policy.denoiser(sample, torch.full((features.shape[0],), int(t)), features, text).float()
        sample = policy.sampler.step(output, t, sample, generator=generator).prev_sample.float()
    return policy.action_normalizer.unnormalize(sample.clamp(-1.0, 1.0))


@pytest.mark.parametrize("scheduler", ["ddim", "dpmsolver", "ddpm"])
def test_unguided_sampling_is_bit_identical_to_the_plain_scheduler_loop(scheduler):
    policy = pose_policy(inference_scheduler=scheduler, num_inference_steps=6)
    with torch.no_grad():
        expected = plain_scheduler_loop(policy, observations(), seeded(1))
    assert torch.equal(policy.predict_action_chunk(observations(), generator=seeded(1)), expected)
    assert torch.equal(policy.predict_action_chunk(observations(), generator=seeded(1), guidance=None), expected)


@pytest.mark.parametrize("scheduler", ["ddim", "dpmsolver"])
def test_guidance_of_scale_zero_changes_nothing_and_no_guidance_never_calls_the_objective(scheduler):
    policy = pose_policy(inference_scheduler=scheduler)
    calls = []

    def counted(chunk):
        calls.append(1)
        return point()(chunk)

    plain = policy.predict_action_chunk(observations(), generator=seeded(2))
    assert not calls
    zero = policy.predict_action_chunk(observations(), generator=seeded(2),
                                       guidance=Guidance(counted, scale=0.0, action_dim=5))
    assert len(calls) == policy.num_inference_steps  # evaluated once per step...
    assert torch.equal(zero, plain)                   # ...and, at scale 0, without effect


@pytest.mark.parametrize(("scheduler", "prediction_type"),
                         [("ddim", "epsilon"), ("ddim", "sample"), ("dpmsolver", "epsilon"), ("dpmsolver", "sample")])
def test_guidance_pulls_the_chunk_end_toward_the_point(scheduler, prediction_type):
    policy = pose_policy(inference_scheduler=scheduler, prediction_type=prediction_type)
    plain = policy.predict_action_chunk(observations(), generator=seeded(3))
    guided = policy.predict_action_chunk(observations(), generator=seeded(3), guidance=Guidance(point(), scale=20.0))
    assert torch.isfinite(guided).all()
    # Random weights put the unguided end 0.2-0.6 m away; guidance must close at least a third of it.
    assert end_distance(guided) < 0.67 * end_distance(plain), (end_distance(plain), end_distance(guided))
    assert point()(guided).mean() < point()(plain).mean()


@pytest.mark.parametrize("prediction_type", ["epsilon", "sample"])
def test_the_model_output_for_a_steered_x0_predicts_exactly_that_x0(prediction_type):
    torch.manual_seed(0)
    sample, output, steered = torch.randn(3, 4, 8, 5).unbind(0)
    abar = torch.tensor(0.37)
    clean = predicted_clean(sample, output, abar, prediction_type)
    assert torch.equal(output_for_clean(output, clean, clean, abar, prediction_type), output)
    new_output = output_for_clean(output, clean, steered, abar, prediction_type)
    assert torch.allclose(predicted_clean(sample, new_output, abar, prediction_type), steered, atol=1e-5)


def test_max_timestep_guides_only_the_late_steps():
    policy = pose_policy(inference_scheduler="ddim", num_inference_steps=10)  # t = 90, 80, ..., 0
    seen = []

    def counted(chunk):
        seen.append(1)
        return point()(chunk)

    policy.predict_action_chunk(observations(), guidance=Guidance(counted, scale=1.0, action_dim=5, max_timestep=30))
    assert len(seen) == 4  # t = 30, 20, 10, 0


def test_inner_steps_call_the_denoiser_that_many_times_per_step():
    policy = pose_policy(inference_scheduler="dpmsolver", num_inference_steps=5)
    calls = []
    policy.denoiser.register_forward_hook(lambda *_: calls.append(1))
    chunk = policy.predict_action_chunk(observations(), generator=seeded(0),
                                        guidance=Guidance(point(), scale=5.0, inner_steps=3))
    assert len(calls) == 15 and torch.isfinite(chunk).all()


def test_an_objective_for_another_action_width_names_both_widths():
    policy = pose_policy(action_dim=6)
    with pytest.raises(ValueError, match="objective reads 5-dim actions but the policy acts in 6 dims"):
        policy.predict_action_chunk(observations(), guidance=Guidance(point(5), scale=1.0))


def test_an_objective_must_return_one_cost_per_batch_element():
    policy = pose_policy()
    with pytest.raises(ValueError, match=r"one cost per batch element, shape \(8,\); got \(\)"):
        policy.predict_action_chunk(observations(), guidance=Guidance(lambda c: c.sum(), action_dim=5))


def test_guidance_is_refused_for_the_mip_head_and_for_bad_settings():
    with pytest.raises(ValueError, match="steers the denoising steps of head 'diffusion'; this policy's head is 'mip'"):
        pose_policy(head="mip").predict_action_chunk(observations(), guidance=Guidance(point()))
    with pytest.raises(ValueError, match="guidance scale must be a finite number >= 0, got -1"):
        Guidance(point(), scale=-1.0)
    with pytest.raises(ValueError, match="pass action_dim=... or give the objective an action_dim"):
        Guidance(lambda c: c.sum((1, 2)))
