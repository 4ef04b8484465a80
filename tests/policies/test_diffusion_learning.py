"""The diffusion policy learns: it overfits four fixed windows on a fixed seed."""

import pytest
import torch
from policy_fixtures import stats_of, synthetic_windows, tensor_batch, tiny_config

from robot_learn.policies import make_policy


def _overfit(steps: int, lr: float, **changes):
    torch.manual_seed(0)
    windows = synthetic_windows()
    stats = stats_of(windows)
    policy = make_policy("diffusion", tiny_config(**changes), stats)
    optimiser = torch.optim.AdamW(policy.parameters(), lr=lr, weight_decay=0.0)
    batch = tensor_batch(windows, repeat=16)  # many noise levels per step
    losses = []
    for _ in range(steps):
        loss = policy.compute_loss(batch)["loss"]
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        losses.append(loss.item())
    policy.eval()
    chunk = policy.predict_action_chunk(tensor_batch(windows)["obs"], generator=torch.Generator().manual_seed(0))
    target = torch.from_numpy(windows["action"])
    span = torch.from_numpy(stats["action"]["max"] - stats["action"]["min"])
    relative_error = (chunk - target).abs() / span  # error as a fraction of each action's range
    return losses, relative_error


@pytest.mark.parametrize(
    ("name", "changes", "steps", "loss_below", "max_error"),
    [
        ("unet-epsilon", dict(prediction_type="epsilon"), 600, 0.05, 0.15),
        # DPM-Solver++ with epsilon prediction: its x0 must be clamped like DDIM's, or it diverges.
        ("unet-epsilon-dpmsolver5", dict(prediction_type="epsilon", inference_scheduler="dpmsolver",
                                         num_inference_steps=5), 600, 0.05, 0.15),
        ("unet-sample", dict(prediction_type="sample"), 400, 0.005, 0.05),
        ("transformer-sample", dict(denoiser="transformer", prediction_type="sample"), 400, 0.01, 0.1),
    ],
)
def test_policy_overfits_four_windows_and_reproduces_their_chunks(name, changes, steps, loss_below, max_error):
    losses, relative_error = _overfit(steps, lr=2e-3 if "unet" in name else 1e-3, **changes)
    start = sum(losses[:10]) / 10
    end = sum(losses[-50:]) / 50
    assert end < loss_below, f"{name}: final loss {end:.4f} (start {start:.4f})"
    assert end < 0.1 * start
    assert relative_error.max() < max_error, f"{name}: max relative error {relative_error.max():.3f}"
    assert relative_error.mean() < max_error / 3


def test_transformer_with_epsilon_prediction_learns_the_chunks():
    losses, relative_error = _overfit(800, lr=1e-3, denoiser="transformer", prediction_type="epsilon")
    assert sum(losses[-50:]) / 50 < 0.06
    # Epsilon-prediction transformers converge more slowly; most of the chunk must be close.
    assert relative_error.mean() < 0.05
    assert (relative_error < 0.1).float().mean() > 0.9


def test_untrained_policy_is_far_from_the_targets():
    """Guards the tests above: the error bounds are not met by chance."""
    _, relative_error = _overfit(0, lr=1e-3)
    assert relative_error.mean() > 0.15
