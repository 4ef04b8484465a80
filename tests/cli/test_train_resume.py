"""``robot-learn train`` resuming in the same run_dir: it says so, and refuses (one line,
exit 2, before any work) what would train nothing or load the wrong model."""

import shutil

import pytest

from robot_learn.cli.main import main

TINY_POLICY = ["policy.down_dims=[16,32]", "policy.action_horizon=8", "policy.execute_horizon=4",
               "policy.num_inference_steps=2", "policy.state_hidden_dims=[32]",
               "policy.state_feature_dim=16", "policy.timestep_embed_dim=16"]


def _args(tmp, run_dir, *extra):
    return ["train", "task=stack", "policy=diffusion_state", "train=fast", "data.episodes=2", "data.cameras=[]",
            f"data.path={tmp / 'demos.zarr'}", "eval.episodes=1", "eval.workers=1", "eval.videos=0",
            "eval.max_steps=4", f"run_dir={run_dir}", *TINY_POLICY, *extra]


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """A tiny run trained to step 4 (train=fast), its checkpoint in run/checkpoints."""
    tmp = tmp_path_factory.mktemp("resume")
    assert main(_args(tmp, tmp / "run")) == 0
    return tmp


def _copy(finished_run, tmp_path):
    shutil.copytree(finished_run / "run", tmp_path / "run")
    return tmp_path / "run"


def test_resuming_says_from_which_step_and_run_dir(finished_run, tmp_path, capsys):
    run = _copy(finished_run, tmp_path)
    capsys.readouterr()
    assert main(_args(finished_run, run, "train.steps=6")) == 0
    out = capsys.readouterr().out
    assert f"[3/4] resuming from step 4 of run_dir {run}: training to step 6" in out
    assert f"resumed from step 4 (run_dir {run}, checkpoint step_0000004)" in out
    assert (run / "checkpoints" / "step_0000006").is_dir()


def test_steps_below_the_checkpoint_are_refused_before_any_work(finished_run, tmp_path, user_error):
    run = _copy(finished_run, tmp_path)
    line = user_error(*_args(tmp_path, run, "train.steps=2"))
    assert "train.steps=2 is below the step of the checkpoint this run resumes from (step 4" in line
    assert f"(run_dir {run})" in line
    assert not (tmp_path / "demos.zarr").exists()  # refused before collecting demos


def test_resuming_with_other_policy_sizes_names_the_setting(finished_run, tmp_path, user_error):
    run = _copy(finished_run, tmp_path)
    line = user_error(*_args(finished_run, run, "train.steps=8", "policy.down_dims=[16,64]"))
    assert "saved with other policy settings (down_dims: saved [16, 32], now [16, 64])" in line


def test_a_garbage_trainer_state_is_named(finished_run, tmp_path, user_error):
    run = _copy(finished_run, tmp_path)
    state = run / "checkpoints" / "step_0000004" / "trainer_state.pt"
    state.write_bytes(b"garbage" * 50)
    line = user_error(*_args(finished_run, run, "train.steps=8"))
    assert f"checkpoint file is corrupt or unreadable: {state}" in line


def test_a_run_held_out_of_core_resumes_where_it_stopped(tmp_path, capsys):
    """With ``data.cache_gb`` below the demos' size, training samples from blocks of whole
    episodes (``block_pool``); the pool's place is in the checkpoint and resuming reads it."""
    from robot_learn.data import EpisodeStore

    assert main(["collect", "task=stack", "episodes=5", "cameras=[]", f"out={tmp_path / 'd.zarr'}"]) == 0
    store = EpisodeStore.open(tmp_path / "d.zarr")
    need = store.num_frames * 4 * sum(store.schema[k]["shape"][0] for k in ("state", "env_state", "action"))
    args = ["train", "task=stack", "policy=diffusion_state", "train=fast", "data.cameras=[]",
            f"data.path={tmp_path / 'd.zarr'}", "eval.episodes=1", "eval.workers=1", "eval.videos=0",
            "eval.max_steps=4", f"run_dir={tmp_path / 'run'}", f"data.cache_gb={0.6 * need / 2**30:.9f}",
            *TINY_POLICY]
    with pytest.warns(UserWarning, match="blocks of episodes held in memory"):
        assert main(args) == 0
    with pytest.warns(UserWarning, match="blocks of episodes held in memory"):
        assert main([*args, "train.steps=6"]) == 0
    assert "resumed from step 4" in capsys.readouterr().out
