"""ITPS samplers on the guidance hook: each runs with the real schedulers, and the ones
that use the objective move the chunk toward it."""

import pytest
import torch
from steering_fixtures import BATCH, TA, TARGET, TO, end_distance, observations, pose_policy, seeded

from robot_learn.policies.diffusion.itps import ITPS_SAMPLERS, ITPSSettings, SteeredSampler
from robot_learn.policies.steering_objectives import PointObjective

pytestmark = pytest.mark.usefixtures("one_torch_thread")
OBJECTIVE = PointObjective(TARGET, action_dim=5, start=TO - 1)


def steer(policy, sampler, seed=0, **settings):
    return SteeredSampler(policy, OBJECTIVE, ITPSSettings(sampler=sampler, **settings))(observations(),
                                                                                         generator=seeded(seed))


@pytest.mark.parametrize("scheduler", ["ddim", "dpmsolver"])
@pytest.mark.parametrize("sampler", ITPS_SAMPLERS)
def test_every_sampler_gives_a_chunk_inside_the_action_range(scheduler, sampler):
    policy = pose_policy(inference_scheduler=scheduler, num_inference_steps=4)
    chunk = steer(policy, sampler, num_samples=4)
    assert chunk.shape == (BATCH, TA, 5) and torch.isfinite(chunk).all()
    low, high = policy.action_normalizer.unnormalize(-torch.ones(5)), policy.action_normalizer.unnormalize(torch.ones(5))
    assert (chunk >= low - 1e-5).all() and (chunk <= high + 1e-5).all()


def test_random_sampling_ignores_the_objective():
    policy = pose_policy()
    assert torch.equal(steer(policy, "random", seed=4), policy.predict_action_chunk(observations(), generator=seeded(4)))


@pytest.mark.parametrize("scheduler", ["ddim", "dpmsolver"])
@pytest.mark.parametrize("sampler", ["post_hoc", "biased_init", "guided", "stochastic"])
def test_samplers_that_read_the_objective_move_the_chunk_toward_the_point(scheduler, sampler):
    policy = pose_policy(inference_scheduler=scheduler)
    plain = steer(policy, "random", seed=1)
    # Random weights pull hard away from any start: biased initialisation starts at 0.3 of the schedule here.
    steered = steer(policy, sampler, seed=1, num_samples=16, bias_level=0.3)
    assert OBJECTIVE(steered).mean() < 0.9 * OBJECTIVE(plain).mean(), (OBJECTIVE(plain).mean(), OBJECTIVE(steered).mean())
    assert end_distance(steered) < end_distance(plain)


def test_post_hoc_ranking_keeps_the_best_of_its_samples():
    policy = pose_policy()
    best = steer(policy, "post_hoc", seed=2, num_samples=6)
    # The same six draws per observation, denoised one by one: the kept chunk has the lowest cost.
    features, _ = policy.encode(observations())
    generator = seeded(2)
    noise = torch.randn((BATCH * 6, TA, 5), generator=generator)
    with torch.no_grad():
        every = policy.action_normalizer.unnormalize(
            policy.denoise(noise, features.repeat_interleave(6, dim=0), None, generator=generator).clamp(-1, 1))
    costs = OBJECTIVE(every).reshape(BATCH, 6)
    assert torch.allclose(OBJECTIVE(best), costs.min(dim=1).values, atol=1e-5)


def test_biased_initialisation_skips_the_noisier_half_of_the_schedule():
    policy = pose_policy(inference_scheduler="ddim", num_inference_steps=10)  # t = 90, ..., 0
    calls = []
    policy.denoiser.register_forward_hook(lambda *_: calls.append(1))
    steer(policy, "biased_init", bias_level=0.5)
    assert len(calls) == 6  # t = 50, 40, ..., 0


def test_stochastic_sampling_runs_its_inner_steps_at_every_step():
    policy = pose_policy(inference_scheduler="dpmsolver", num_inference_steps=5)
    calls = []
    policy.denoiser.register_forward_hook(lambda *_: calls.append(1))
    steer(policy, "stochastic", inner_steps=4)
    assert len(calls) == 20


def test_an_unknown_sampler_lists_the_valid_ones():
    with pytest.raises(ValueError, match="unknown steer_sampler 'mcmc'; valid choices: random, post_hoc, "
                                         "biased_init, guided, stochastic"):
        ITPSSettings(sampler="mcmc")


def test_a_steered_sampler_refuses_a_policy_of_another_action_width():
    with pytest.raises(ValueError, match="objective reads 5-dim actions but the policy acts in 6 dims"):
        SteeredSampler(pose_policy(action_dim=6), OBJECTIVE)


def test_select_action_plans_its_chunks_with_the_steered_sampler():
    policy = pose_policy()
    steered = SteeredSampler(policy, OBJECTIVE, ITPSSettings(sampler="guided"))
    step = {"state": observations()["state"][:, 0]}
    action = policy.select_action(step, generator=seeded(6), predict=steered)
    history = {"state": torch.stack([step["state"]] * TO, dim=1)}
    assert torch.equal(action, steered(history, generator=seeded(6))[:, TO - 1])
    policy.drop_queued_actions()  # a new request: the next action comes from a fresh chunk
    assert len(policy._action_queue) == 0


@pytest.mark.parametrize("sampler", ["guided", "stochastic"])
def test_gradient_samplers_steer_under_inference_mode_as_evaluation_runs_them(sampler):
    """evaluate() and sessions sample under torch.inference_mode, where autograd is off: the
    sampler steps out of it, so the chunk matches one sampled outside (it used to raise)."""
    policy = pose_policy()
    outside = steer(policy, sampler, seed=3)
    with torch.inference_mode():
        inside = steer(policy, sampler, seed=3)
    assert torch.allclose(inside, outside, atol=1e-6)
