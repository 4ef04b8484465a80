"""Sampling: schedulers, seeds, the receding-horizon queue, EMA and autocast."""

import pytest
import torch
from diffusers import DDIMScheduler, DDPMScheduler, DPMSolverMultistepScheduler
from diffusers.training_utils import EMAModel
from policy_fixtures import ACTION_DIM, TO, tensor_batch, tiny_config

from robot_learn.policies import make_policy


@pytest.fixture
def policy(stats):
    torch.manual_seed(0)
    return make_policy("diffusion", tiny_config(), stats).eval()


def _count_denoiser_calls(policy):
    calls = []
    policy.denoiser.register_forward_hook(lambda *_: calls.append(1))
    return calls


@pytest.mark.parametrize(
    ("kind", "steps", "cls"),
    [("ddpm", 100, DDPMScheduler), ("ddpm", 20, DDPMScheduler), ("ddim", 10, DDIMScheduler), ("ddim", 3, DDIMScheduler),
     ("dpmsolver", 5, DPMSolverMultistepScheduler)],
)
def test_every_sampler_runs_its_configured_number_of_steps(stats, windows, kind, steps, cls):
    torch.manual_seed(0)
    policy = make_policy("diffusion", tiny_config(inference_scheduler=kind, num_inference_steps=steps), stats).eval()
    assert isinstance(policy.sampler, cls)
    calls = _count_denoiser_calls(policy)
    chunk = policy.predict_action_chunk(tensor_batch(windows)["obs"], generator=torch.Generator().manual_seed(0))
    assert len(calls) == steps
    assert chunk.shape == (4, 8, ACTION_DIM) and torch.isfinite(chunk).all()
    # Clipped to [-1, 1] before unnormalising: inside the action stats' range.
    low, high = (torch.from_numpy(stats["action"][k]) for k in ("min", "max"))
    assert (chunk >= low - 1e-5).all() and (chunk <= high + 1e-5).all()


@pytest.mark.parametrize("kind", ["ddim", "dpmsolver"])
def test_from_zero_initial_noise_the_chunk_does_not_depend_on_the_generator(stats, windows, kind):
    """``init_noise_scale=0``: the sampler starts from zeros and these samplers' steps add no noise, so two
    generators give one chunk; at 1 (plain sampling) and at 0.5 they give two."""
    torch.manual_seed(0)
    policy = make_policy("diffusion", tiny_config(inference_scheduler=kind, num_inference_steps=5), stats).eval()
    obs = tensor_batch(windows)["obs"]

    def two_chunks(scale):
        policy.config = policy.config.with_changes(init_noise_scale=scale)
        return [policy.predict_action_chunk(obs, generator=torch.Generator().manual_seed(s)) for s in (0, 1)]

    for scale in (1.0, 0.5):
        first, second = two_chunks(scale)
        assert (first - second).abs().max() > 1e-3
    first, second = two_chunks(0.0)
    torch.testing.assert_close(first, second, rtol=0, atol=0)


@pytest.mark.parametrize("kind", ["ddpm", "ddim"])
def test_a_widened_sample_range_lets_chunks_reach_beyond_the_demos_range(stats, windows, kind, tmp_path):
    """An untrained denoiser's x0 guesses land far outside [-1, 1]: clipped to the demos' range at
    first, reaching 1.75 times it after widen_sample_range(1.73) (rounded up to 0.05); saved with the policy."""
    torch.manual_seed(0)
    policy = make_policy("diffusion", tiny_config(inference_scheduler=kind, num_inference_steps=5), stats).eval()
    obs = {k: v.repeat(16, *[1] * (v.dim() - 1)) for k, v in tensor_batch(windows)["obs"].items()}

    def extent():
        chunk = policy.predict_action_chunk(obs, generator=torch.Generator().manual_seed(0))
        return float(policy.action_normalizer.normalize(chunk).abs().max())

    assert extent() <= 1.0 + 1e-5
    assert not policy.widen_sample_range(0.9) and policy.config.clip_sample_range == 1.0
    # The demos' own extremes, normalised in float32 (1.0000001 on one axis of bin_place), do not widen it.
    demo_extent = float(policy.action_normalizer.normalize(torch.from_numpy(stats["action"]["max"])).abs().max())
    assert not policy.widen_sample_range(max(demo_extent, 1.0000001)) and policy.config.clip_sample_range == 1.0
    assert policy.widen_sample_range(1.73) and policy.config.clip_sample_range == 1.75
    assert 1.0 + 1e-3 < extent() <= 1.75 + 1e-5
    policy.save(tmp_path / "p")
    from robot_learn.policies import load_policy

    assert load_policy(tmp_path / "p").config.clip_sample_range == 1.75
    with pytest.raises(ValueError, match="clip_sample_range must be >= 1"):
        tiny_config(clip_sample_range=0.5)


def test_set_inference_scheduler_switches_sampler_and_steps(policy, windows):
    policy.set_inference_scheduler("dpmsolver", 4)
    calls = _count_denoiser_calls(policy)
    policy.predict_action_chunk(tensor_batch(windows)["obs"])
    assert isinstance(policy.sampler, DPMSolverMultistepScheduler) and len(calls) == 4
    with pytest.raises(ValueError, match="unknown inference_scheduler 'heun'; valid choices: ddpm, ddim, dpmsolver"):
        policy.set_inference_scheduler("heun")


def test_training_uses_ddpm_with_the_configured_schedule(policy):
    assert isinstance(policy.noise_scheduler, DDPMScheduler)
    assert policy.noise_scheduler.config.num_train_timesteps == 100
    assert policy.noise_scheduler.config.beta_schedule == "squaredcos_cap_v2"


@pytest.mark.parametrize("kind", ["ddpm", "ddim", "dpmsolver"])
def test_sampling_is_reproducible_from_a_seeded_generator(stats, windows, kind):
    policy = make_policy("diffusion", tiny_config(inference_scheduler=kind, num_inference_steps=5), stats).eval()
    obs = tensor_batch(windows)["obs"]
    a = policy.predict_action_chunk(obs, generator=torch.Generator().manual_seed(3))
    b = policy.predict_action_chunk(obs, generator=torch.Generator().manual_seed(3))
    c = policy.predict_action_chunk(obs, generator=torch.Generator().manual_seed(4))
    assert torch.equal(a, b)
    assert not torch.allclose(a, c)


def _step_obs(windows, t):
    state = torch.from_numpy(windows["state"][:, 0]) + 0.1 * t
    return {"state": state, "env_state": torch.from_numpy(windows["env_state"][:, 0])}


def test_select_action_refills_the_queue_every_execute_horizon_steps(policy, windows):
    calls = _count_denoiser_calls(policy)
    steps_per_chunk = policy.num_inference_steps
    chunks_made = []
    for t in range(12):
        action = policy.select_action(_step_obs(windows, t))
        assert action.shape == (4, ACTION_DIM)
        chunks_made.append(len(calls) // steps_per_chunk)
    # execute_horizon = 4: new chunks at steps 0, 4 and 8.
    assert chunks_made == [1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3]


def test_select_action_pads_history_with_first_obs_and_executes_from_the_current_step(policy, windows):
    obs0 = _step_obs(windows, 0)
    actions = [policy.select_action(obs0, generator=torch.Generator().manual_seed(5))]
    actions += [policy.select_action(_step_obs(windows, t)) for t in (1, 2, 3)]
    history = {key: torch.stack([value] * TO, dim=1) for key, value in obs0.items()}
    chunk = policy.predict_action_chunk(history, generator=torch.Generator().manual_seed(5))
    for i, action in enumerate(actions):
        assert torch.equal(action, chunk[:, TO - 1 + i])


def test_reset_clears_the_queue_and_the_history(policy, windows):
    calls = _count_denoiser_calls(policy)
    policy.select_action(_step_obs(windows, 0))
    policy.select_action(_step_obs(windows, 1))
    before = len(calls)
    policy.reset()
    assert len(policy._action_queue) == 0 and not policy._history
    policy.select_action(_step_obs(windows, 5))
    assert len(calls) == before + policy.num_inference_steps  # a new chunk right after reset


def test_select_action_accepts_numpy_observations(policy, windows):
    action = policy.select_action({"state": windows["state"][:, 0], "env_state": windows["env_state"][:, 0]})
    assert isinstance(action, torch.Tensor) and action.shape == (4, ACTION_DIM)


def test_changing_batch_size_without_reset_is_rejected(policy, windows):
    policy.select_action(_step_obs(windows, 0))
    small = {key: value[:2] for key, value in _step_obs(windows, 1).items()}
    with pytest.raises(ValueError, match=r"call reset\(\)"):
        policy.select_action(small)


def test_wrong_observation_horizon_is_rejected(policy, windows):
    obs = tensor_batch(windows)["obs"]
    with pytest.raises(ValueError, match="obs_horizon=2 steps, got 1"):
        policy.predict_action_chunk({key: value[:, :1] for key, value in obs.items()})


def test_wrong_action_shape_is_rejected(policy, windows):
    batch = tensor_batch(windows)
    batch["action"] = batch["action"][:, :5]
    with pytest.raises(ValueError, match=r"batch\['action'\] must be \[B, 8, 2\], got \(4, 5, 2\)"):
        policy.compute_loss(batch)


def test_ema_tracks_parameters_and_leaves_normaliser_buffers_alone(policy, windows):
    policy.train()
    ema = EMAModel(policy.parameters(), decay=0.9)
    buffers_before = {k: v.clone() for k, v in policy.named_buffers()}
    optimiser = torch.optim.AdamW(policy.parameters(), lr=1e-2)
    batch = tensor_batch(windows)
    for _ in range(3):
        loss = policy.compute_loss(batch)["loss"]
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        ema.step(policy.parameters())
    trained = [p.detach().clone() for p in policy.parameters()]
    ema.copy_to(policy.parameters())
    assert any(not torch.equal(a, b) for a, b in zip(trained, policy.parameters()))
    assert all(torch.equal(buffers_before[k], v) for k, v in policy.named_buffers())
    assert torch.isfinite(policy.eval().predict_action_chunk(batch["obs"])).all()


@pytest.mark.parametrize("denoiser", ["unet", "transformer"])
def test_loss_and_sampling_work_under_bf16_autocast(stats, windows, denoiser):
    policy = make_policy("diffusion", tiny_config(denoiser=denoiser), stats)
    batch = tensor_batch(windows)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = policy.compute_loss(batch)["loss"]
    assert loss.dtype == torch.float32 and torch.isfinite(loss)
    loss.backward()
    assert all(p.grad is None or torch.isfinite(p.grad).all() for p in policy.parameters())
    policy.eval()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        chunk = policy.predict_action_chunk(batch["obs"], generator=torch.Generator().manual_seed(0))
    assert chunk.dtype == torch.float32 and torch.isfinite(chunk).all()


def test_select_action_ignores_extra_observations_and_names_missing_ones(policy, windows):
    obs = {**_step_obs(windows, 0), "images": {"front": torch.zeros(4, 8, 8, 3, dtype=torch.uint8)}, "instruction": "stack"}
    assert policy.select_action(obs).shape == (4, ACTION_DIM)
    assert set(policy._history) == {("state",), ("env_state",)}
    policy.reset()
    with pytest.raises(ValueError, match=r"lacks \['env_state'\]"):
        policy.select_action({"state": obs["state"]})


def test_history_is_not_changed_when_the_env_reuses_its_observation_buffer(policy, windows):
    buffer = {"state": windows["state"][:, 0].copy(), "env_state": windows["env_state"][:, 0].copy()}
    policy.select_action(buffer)
    first = buffer["state"].copy()
    buffer["state"] += 100.0  # an env writing the next observation into the same array
    assert torch.equal(policy._history[("state",)][0], torch.from_numpy(first))
