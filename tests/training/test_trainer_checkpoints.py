"""Checkpoint layout, the ``latest`` pointer, atomic writes and clear errors for broken checkpoints."""

import shutil

import pytest
import torch
from training_fixtures import build_store, make_sampler, make_tiny_policy

from robot_learn.policies import load_policy
from robot_learn.policies.checkpoint import resolve_policy_dir
from robot_learn.training import CheckpointError, Trainer, TrainConfig, find_latest_checkpoint
from robot_learn.training.checkpoint import write_checkpoint


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return build_store(tmp_path_factory.mktemp("data") / "store", num_episodes=2, length=20)


def _trainer(store, out_dir, steps=20, ckpt_every=5, keep_last_k=2):
    cfg = TrainConfig(steps=steps, batch_size=8, warmup_steps=2, ckpt_every=ckpt_every, keep_last_k=keep_last_k,
                      log_every=5, out_dir=str(out_dir), device="cpu", progress_bar=False)
    return Trainer(make_tiny_policy(store), make_sampler(store, 8, 0), cfg)


def test_checkpoints_hold_policy_ema_and_a_weights_only_trainer_state(store, tmp_path):
    trainer = _trainer(store, tmp_path)
    trainer.fit()
    ckpt_root = tmp_path / "checkpoints"

    # keep_last_k=2: only the two newest survive; latest names the newest.
    assert sorted(p.name for p in ckpt_root.iterdir()) == ["latest", "step_0000015", "step_0000020"]
    assert (ckpt_root / "latest").read_text().strip() == "step_0000020"
    assert find_latest_checkpoint(tmp_path) == ckpt_root / "step_0000020"

    ckpt = ckpt_root / "step_0000020"
    assert {p.name for p in ckpt.iterdir()} == {"policy", "ema", "trainer_state.pt"}
    state = torch.load(ckpt / "trainer_state.pt", weights_only=True)  # no pickled objects inside
    assert state["step"] == 20 and state["world_size"] == 1
    assert {"optimizer", "lr_scheduler", "ema", "ranks", "config"} <= set(state)
    assert state["ema"]["optimization_step"] == 20
    assert set(state["ranks"][0]) == {"rng", "sampler"}
    assert state["lr_scheduler"]["last_epoch"] == 20

    live, ema = load_policy(ckpt / "policy"), load_policy(ckpt / "ema")
    for (name, p_live), p_trained in zip(live.named_parameters(), trainer.policy.parameters()):
        assert torch.equal(p_live, p_trained), name
    for p_ema, shadow in zip(ema.parameters(), trainer.ema.shadow_params):
        assert torch.equal(p_ema, shadow)
    assert any(not torch.equal(a, b) for a, b in zip(live.parameters(), ema.parameters()))
    # The final policy in out_dir/policy is the EMA one.
    final = load_policy(tmp_path / "policy")
    assert all(torch.equal(a, b) for a, b in zip(final.parameters(), ema.parameters()))
    # `robot-learn eval checkpoint=...` takes a run dir to its final policy and a kept
    # checkpoint to its EMA weights, as the run's own evaluation does (not the live ones)
    assert resolve_policy_dir(tmp_path) == tmp_path / "policy"
    assert resolve_policy_dir(ckpt) == ckpt / "ema"


def test_a_checkpoint_write_that_dies_midway_leaves_the_previous_one_as_latest(store, tmp_path):
    _trainer(store, tmp_path, steps=10, ckpt_every=10).fit()

    def dies_midway(tmp_dir):
        tmp_dir.mkdir()
        (tmp_dir / "trainer_state.pt").write_bytes(b"half a file")
        raise KeyboardInterrupt("killed while writing")

    with pytest.raises(KeyboardInterrupt):
        write_checkpoint(tmp_path, 15, dies_midway)
    assert (tmp_path / "checkpoints" / "latest").read_text().strip() == "step_0000010"
    assert not (tmp_path / "checkpoints" / "step_0000015").exists()

    # A resumed run ignores (and removes) the half-written temp dir and continues from step 10.
    trainer = _trainer(store, tmp_path, steps=12, ckpt_every=0)
    trainer.fit()
    assert trainer.step == 12
    assert not [p for p in (tmp_path / "checkpoints").iterdir() if p.name.startswith(".tmp_")]
    assert (tmp_path / "checkpoints" / "latest").read_text().strip() == "step_0000012"


def test_resume_refuses_a_latest_pointer_to_a_missing_checkpoint_naming_it(store, tmp_path):
    _trainer(store, tmp_path, steps=10, ckpt_every=5, keep_last_k=0).fit()
    shutil.rmtree(tmp_path / "checkpoints" / "step_0000010")
    with pytest.raises(CheckpointError, match=r"latest names .*step_0000010, which does not exist"):
        _trainer(store, tmp_path, steps=20).fit()


def test_resume_refuses_a_missing_trainer_state_naming_the_file(store, tmp_path):
    _trainer(store, tmp_path, steps=10, ckpt_every=10).fit()
    (tmp_path / "checkpoints" / "step_0000010" / "trainer_state.pt").unlink()
    with pytest.raises(CheckpointError, match=r"checkpoint file missing: .*step_0000010/trainer_state\.pt"):
        _trainer(store, tmp_path, steps=20).fit()


def test_resume_refuses_a_corrupt_trainer_state_naming_the_file(store, tmp_path):
    _trainer(store, tmp_path, steps=10, ckpt_every=10).fit()
    path = tmp_path / "checkpoints" / "step_0000010" / "trainer_state.pt"
    path.write_bytes(path.read_bytes()[:200])  # truncated, as after a disk-full write
    with pytest.raises(CheckpointError, match=r"corrupt or unreadable: .*step_0000010/trainer_state\.pt"):
        _trainer(store, tmp_path, steps=20).fit()


def test_resume_refuses_corrupt_ema_weights_naming_the_file(store, tmp_path):
    _trainer(store, tmp_path, steps=10, ckpt_every=10).fit()
    weights = tmp_path / "checkpoints" / "step_0000010" / "ema" / "model.safetensors"
    weights.write_bytes(b"\x00" * 64)
    with pytest.raises(CheckpointError, match=r"step_0000010/ema/model\.safetensors"):
        _trainer(store, tmp_path, steps=20).fit()


def test_resume_false_starts_from_scratch_despite_existing_checkpoints(store, tmp_path):
    _trainer(store, tmp_path, steps=10, ckpt_every=10).fit()
    cfg = TrainConfig(steps=3, batch_size=8, ckpt_every=0, resume=False, out_dir=str(tmp_path), device="cpu",
                      progress_bar=False)
    trainer = Trainer(make_tiny_policy(store), make_sampler(store, 8, 0), cfg)
    trainer.fit()
    assert trainer.step == 3 and trainer.ema.optimization_step == 3
