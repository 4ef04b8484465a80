"""CUDA RNG save and restore: exact resume continues the GPU's random stream."""

import dataclasses
import io

import pytest
import torch
from gpu_fixtures import CUDA
from training_fixtures import build_store, make_sampler, make_tiny_policy

from robot_learn.policies import to_torch
from robot_learn.training import Trainer, TrainConfig, find_latest_checkpoint, load_trainer_state
from robot_learn.training.rng_state import capture_rng_state, restore_rng_state

pytestmark = pytest.mark.gpu


def _draws() -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(1000, device=CUDA), torch.randint(0, 1000, (1000,), device=CUDA)


def test_restoring_a_captured_state_repeats_the_next_cuda_draws_after_a_checkpoint_round_trip():
    torch.cuda.manual_seed_all(3)
    torch.randn(17, device=CUDA)  # somewhere inside the stream, not at a seed
    state = capture_rng_state()
    assert len(state["cuda"]) == torch.cuda.device_count()
    first = _draws()
    assert not torch.equal(_draws()[0], first[0]), "the stream did not advance"
    buffer = io.BytesIO()  # as the trainer stores it: torch.save, loaded with weights_only
    torch.save(state, buffer)
    buffer.seek(0)
    restore_rng_state(torch.load(buffer, weights_only=True))
    again = _draws()
    assert torch.equal(again[0], first[0]) and torch.equal(again[1], first[1])


def test_a_restored_state_gives_a_policy_the_same_training_noise(tmp_path):
    store = build_store(tmp_path / "store", num_episodes=2, length=20)
    policy = make_tiny_policy(store).to(CUDA)
    sampler = make_sampler(store, batch_size=8, seed=0)
    batch = to_torch(sampler.sample(), CUDA)
    state = capture_rng_state()
    first = policy.compute_loss(batch)["loss"]
    restore_rng_state(state)
    # The same noise and timesteps: the loss repeats (another draw would change it by far more).
    assert torch.allclose(policy.compute_loss(batch)["loss"], first, rtol=1e-5, atol=0.0)


def test_a_cuda_training_checkpoint_holds_the_cuda_rng_and_loading_it_restores_that_stream(tmp_path):
    store = build_store(tmp_path / "store", num_episodes=3, length=30)
    cfg = TrainConfig(steps=6, batch_size=8, lr=1e-3, warmup_steps=1, ckpt_every=3, keep_last_k=2, log_every=3,
                      out_dir=str(tmp_path / "run"), device="cuda", progress_bar=False)
    Trainer(make_tiny_policy(store), make_sampler(store, 8, seed=0), cfg).fit()
    checkpoint = find_latest_checkpoint(tmp_path / "run")
    saved = load_trainer_state(checkpoint)["ranks"][0]["rng"]["cuda"]
    assert len(saved) == torch.cuda.device_count(), "the checkpoint holds no CUDA RNG state"
    device = torch.cuda.current_device()

    resumed = Trainer(make_tiny_policy(store), make_sampler(store, 8, seed=0), dataclasses.replace(cfg, steps=12))
    torch.cuda.manual_seed_all(12345)  # as in a fresh process: another stream
    assert not torch.equal(torch.cuda.get_rng_state(), saved[device])
    resumed.load_checkpoint(checkpoint)
    assert torch.equal(torch.cuda.get_rng_state(), saved[device])
