"""train.optimizer_impl: every AdamW implementation trains the same weights; fused is the default."""

import pytest
import torch
from training_fixtures import build_store, make_sampler, make_tiny_policy

from robot_learn.training import TrainConfig, Trainer


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return build_store(tmp_path_factory.mktemp("opt") / "s.zarr", num_episodes=3, length=20)


def _train(store, out_dir, impl):
    cfg = TrainConfig(steps=5, batch_size=8, warmup_steps=1, ckpt_every=0, log_every=5, out_dir=str(out_dir),
                      device="cpu", progress_bar=False, lr=1e-3, optimizer_impl=impl)
    trainer = Trainer(make_tiny_policy(store), make_sampler(store, 8, 0), cfg)
    trainer.fit()
    return trainer


def test_each_implementation_takes_the_same_steps(store, tmp_path, one_torch_thread):
    trainers = {impl: _train(store, tmp_path / impl, impl) for impl in ("fused", "foreach", "for_loop")}
    assert trainers["fused"].optimizer.defaults["fused"] is True
    assert trainers["foreach"].optimizer.defaults["foreach"] is True
    assert trainers["for_loop"].optimizer.defaults["foreach"] is False
    start = make_tiny_policy(store).state_dict()
    weights = {impl: t.policy.state_dict() for impl, t in trainers.items()}
    moved = max((weights["for_loop"][k] - start[k]).abs().max().item() for k in start)
    assert moved > 1e-3  # the steps were taken...
    for impl in ("fused", "foreach"):  # ... and agree up to float rounding
        for key, value in weights["for_loop"].items():
            torch.testing.assert_close(weights[impl][key], value, rtol=1e-4, atol=1e-5)


def test_fused_is_the_default():
    assert TrainConfig().optimizer_impl == "fused"


def test_the_ema_policy_sync_moves_the_version_counters(store, tmp_path):
    """``_sync_ema_policy`` copies with ``copy_`` (EMAModel.copy_to writes through ``.data``), so a
    compile_inference graph holding frozen weights (CompiledCall) sees the new EMA weights."""
    trainer = _train(store, tmp_path / "ema", "fused")
    params = list(trainer.ema_policy.parameters())
    before = [p._version for p in params]
    trainer._sync_ema_policy()
    assert all(p._version > v for p, v in zip(params, before))  # every parameter, not only the buffers
    for param, shadow in zip(trainer.ema_policy.parameters(), trainer.ema.shadow_params):
        torch.testing.assert_close(param, shadow)
