"""The trainer learns: loss falls on a tiny real dataset, and evaluation sees the EMA policy."""

import csv

import numpy as np
import pytest
import torch
from training_fixtures import build_store, make_sampler, make_tiny_policy

from robot_learn.policies import to_torch
from robot_learn.training import Trainer, TrainConfig


def _fixed_loss(policy, sampler) -> float:
    """Diffusion loss on fixed windows with fixed noise and timesteps (seeded), so two policies compare fairly."""
    store = sampler.store
    episodes = np.repeat(np.arange(store.num_episodes), 8)
    steps = np.tile(np.arange(0, 40, 5), store.num_episodes)
    batch = to_torch(sampler.batch_at(episodes, steps))
    with torch.no_grad(), torch.random.fork_rng():
        torch.manual_seed(123)
        return float(policy.eval().compute_loss(batch)["loss"])


def test_loss_decreases_and_the_ema_policy_learns_on_a_tiny_dataset(tmp_path):
    store = build_store(tmp_path / "store")
    policy = make_tiny_policy(store)
    sampler = make_sampler(store, batch_size=32, seed=0)
    loss_before = _fixed_loss(make_tiny_policy(store), sampler)
    cfg = TrainConfig(steps=300, batch_size=32, lr=2e-3, warmup_steps=10, log_every=10, ckpt_every=0,
                      ema={"power": 0.9}, out_dir=str(tmp_path / "run"), device="cpu", progress_bar=False)
    trainer = Trainer(policy, sampler, cfg)
    result = trainer.fit()

    with open(tmp_path / "run" / "metrics.csv") as f:
        losses = [float(row["loss"]) for row in csv.DictReader(f)]
    assert len(losses) == 30
    first, last = np.mean(losses[:3]), np.mean(losses[-3:])
    assert last < 0.6 * first, f"loss did not fall enough: first {first:.3f}, last {last:.3f}"
    assert result["step"] == 300 and result["loss"] == pytest.approx(losses[-1])
    # The EMA weights (what gets saved and evaluated) learned too, not only the live ones.
    loss_after = _fixed_loss(trainer.ema_policy, sampler)
    assert loss_after < 0.6 * loss_before, f"EMA policy loss on fixed windows {loss_before:.3f} -> {loss_after:.3f}"


def test_evaluate_fn_gets_the_ema_weights_every_eval_every_steps(tmp_path):
    store = build_store(tmp_path / "store", num_episodes=2, length=20)
    policy = make_tiny_policy(store)
    calls = []

    def evaluate(ema_policy, step):
        # The evaluated policy is a separate EMA copy, not the live (training) module.
        calls.append((step, ema_policy is not policy, [p.detach().clone() for p in ema_policy.parameters()]))
        torch.rand(100)  # evaluation may draw random numbers without disturbing training
        return {"success_rate": step / 100, "note": "not a number: skipped"}

    cfg = TrainConfig(steps=12, batch_size=8, warmup_steps=2, eval_every=5, log_every=4, ckpt_every=0,
                      out_dir=str(tmp_path / "run"), device="cpu", progress_bar=False)
    trainer = Trainer(policy, make_sampler(store, 8, 0), cfg, evaluate_fn=evaluate)
    result = trainer.fit()

    assert [c[0] for c in calls] == [5, 10, 12]  # every 5 steps plus the final step
    assert all(c[1] for c in calls)
    live = list(policy.parameters())
    assert any(not torch.equal(a, b) for a, b in zip(calls[-1][2], live)), "evaluated weights equal the live weights"
    assert all(torch.equal(a, b) for a, b in zip(calls[-1][2], trainer.ema.shadow_params))
    assert result["eval/success_rate"] == pytest.approx(0.12)
    with open(tmp_path / "run" / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    assert "eval/success_rate" in rows[0] and "eval/note" not in rows[0]
    assert [r["step"] for r in rows if r["eval/success_rate"]] == ["5", "10", "12"]


def test_evaluation_does_not_change_the_training_trajectory(tmp_path):
    store = build_store(tmp_path / "store", num_episodes=2, length=20)
    finals = []
    for with_eval in (False, True):
        policy = make_tiny_policy(store)
        cfg = TrainConfig(steps=8, batch_size=8, warmup_steps=2, eval_every=3, ckpt_every=0,
                          out_dir=str(tmp_path / f"run{with_eval}"), device="cpu", progress_bar=False)
        evaluate = (lambda p, s: {"x": float(torch.rand(()))}) if with_eval else None
        Trainer(policy, make_sampler(store, 8, 0), cfg, evaluate_fn=evaluate).fit()
        finals.append([p.detach().clone() for p in policy.parameters()])
    assert all(torch.equal(a, b) for a, b in zip(*finals))


def test_sampler_batch_size_must_match_the_config(tmp_path):
    store = build_store(tmp_path / "store", num_episodes=1, length=10)
    cfg = TrainConfig(steps=1, batch_size=64, out_dir=str(tmp_path / "run"), device="cpu")
    with pytest.raises(ValueError, match="sampler batch_size 8 differs from TrainConfig.batch_size 64"):
        Trainer(make_tiny_policy(store), make_sampler(store, 8, 0), cfg)
