"""Resuming says what it does, and refuses what would silently do nothing or load the wrong model."""

import pytest
from training_fixtures import OBS_KEYS, build_store, make_sampler, make_tiny_policy

from robot_learn.policies import DiffusionPolicy
from robot_learn.training import CheckpointError, Trainer, TrainConfig
from robot_learn.training.checkpoint import check_resume_steps


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return build_store(tmp_path_factory.mktemp("data") / "store", num_episodes=2, length=20)


def _config(out_dir, steps):
    return TrainConfig(steps=steps, batch_size=8, warmup_steps=2, ckpt_every=0, log_every=5, out_dir=str(out_dir),
                       device="cpu", progress_bar=False)


def _trainer(store, out_dir, steps, policy=None):
    return Trainer(policy or make_tiny_policy(store), make_sampler(store, 8, 0), _config(out_dir, steps))


def test_resume_says_the_step_and_run_dir_it_continues_from(store, tmp_path, capsys):
    _trainer(store, tmp_path, steps=4).fit()
    capsys.readouterr()
    trainer = _trainer(store, tmp_path, steps=6)
    trainer.fit()
    assert trainer.step == 6
    assert f"resumed from step 4 (run_dir {tmp_path}, checkpoint step_0000004)" in capsys.readouterr().out


def test_steps_below_the_checkpoint_step_are_refused_instead_of_training_nothing(store, tmp_path):
    _trainer(store, tmp_path, steps=4).fit()
    with pytest.raises(ValueError, match=r"steps=2 is below the step of the checkpoint this run resumes from "
                                         r"\(step 4, .*step_0000004\), so nothing would be trained"):
        _trainer(store, tmp_path, steps=2).fit()
    # The check reads only the checkpoint's name: the CLI runs it before any work.
    assert check_resume_steps(tmp_path, 4) == 4 and check_resume_steps(tmp_path / "fresh", 1) is None


def test_resume_with_other_policy_sizes_names_the_changed_settings(store, tmp_path):
    _trainer(store, tmp_path, steps=4).fit()
    wider = make_tiny_policy(store).config.with_changes(down_dims=[16, 64])
    policy = DiffusionPolicy(wider, stats=store.stats(["action", *OBS_KEYS]))
    with pytest.raises(CheckpointError, match=r"saved with other policy settings \(down_dims: saved \[16, 32\], "
                                              r"now \[16, 64\]\); resuming needs the same settings"):
        _trainer(store, tmp_path, steps=8, policy=policy).fit()


def test_resume_with_another_head_is_refused_though_the_weights_fit(store, tmp_path):
    """The MIP head has the diffusion head's parameters, so only the config tells them apart."""
    _trainer(store, tmp_path, steps=4).fit()
    stats = store.stats(["action", *OBS_KEYS])
    mip = make_tiny_policy(store).config.with_changes(head="mip")
    with pytest.raises(CheckpointError, match=r"saved with other policy settings \(head: saved 'diffusion', "
                                              r"now 'mip'\); resuming needs the same settings"):
        _trainer(store, tmp_path, steps=8, policy=DiffusionPolicy(mip, stats=stats)).fit()
    # Sampling settings alone may change: the run resumes.
    faster = make_tiny_policy(store).config.with_changes(num_inference_steps=3, execute_horizon=2)
    trainer = _trainer(store, tmp_path, steps=6, policy=DiffusionPolicy(faster, stats=stats))
    trainer.fit()
    assert trainer.step == 6


def test_a_garbage_trainer_state_is_named_in_one_line(store, tmp_path):
    _trainer(store, tmp_path, steps=4).fit()
    path = tmp_path / "checkpoints" / "step_0000004" / "trainer_state.pt"
    path.write_bytes(b"this is not a torch file" * 20)
    with pytest.raises(CheckpointError) as info:
        _trainer(store, tmp_path, steps=8).fit()
    assert str(path) in str(info.value) and "\n" not in str(info.value)
