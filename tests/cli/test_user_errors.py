"""The CLI rule: a user's mistake is one line naming the key, file or value (and the valid
choices), exit status 2, no traceback; ``--debug`` shows the traceback."""

import pytest
import torch

from robot_learn.cli.errors import CLIError, run_command


def test_debug_anywhere_on_the_command_line_shows_the_traceback(run_cli):
    out = run_cli("collect", "episodes=abc", "--debug")
    assert out.returncode == 2
    assert "Traceback (most recent call last)" in out.stderr
    assert out.stderr.rstrip().splitlines()[-1] == "robot-learn collect: error: episodes must be an integer, got 'abc'"


def test_without_debug_the_installed_command_prints_one_line(run_cli):
    out = run_cli("collect", "episodes=abc")
    assert (out.returncode, out.stderr) == (2, "robot-learn collect: error: episodes must be an integer, got 'abc'\n")


def test_a_bug_keeps_its_traceback():
    def buggy(argv):
        raise KeyError("not the user's fault")

    with pytest.raises(KeyError):
        run_command("robot-learn x", buggy, [])
    assert run_command("robot-learn x", lambda argv: (_ for _ in ()).throw(CLIError("bad")), []) == 2


@pytest.mark.parametrize(("args", "message"), [
    (("collect", "episodes=abc"), "robot-learn collect: error: episodes must be an integer, got 'abc'"),
    (("collect", "noise=loud"), "noise must be a number, got 'loud'"),
    (("collect", "foo.bar=1"), "Could not override 'foo.bar'"),
    (("collect", "episodes=[1"), "episodes=[1"),
    (("train", "task=stak"), "Could not find 'task/stak'; Available options in 'task': bin_either, bin_place, bin_take"),
    (("eval", "task=stack"), "missing required setting checkpoint; give checkpoint=... on the command line"),
    (("eval", "checkpoint=x"), "You must specify 'task', e.g, task=<OPTION>; Available options: bin_either, bin_place, "),
    (("hitl",), "missing required setting policy_dir"),
    (("eval", "task=stack", "checkpoint=x", "device=bogus"), "unknown device 'bogus'; valid devices: auto, cpu, cuda"),
    (("eval", "task=stack", "checkpoint=x", "episodes=0"), "episodes must be >= 1, got 0"),
    (("eval", "task=stack", "checkpoint=x", "workers=two"), "workers must be an integer, got 'two'"),
    (("eval", "task=stack", "checkpoint=x", "vectorization=para"),
     "unknown vectorization 'para'; valid choices: sync, async, auto"),
    (("eval", "task=stack", "checkpoint=x", "max_steps=-1"), "max_steps must be >= 1, got -1"),
    (("hw", "scan"), "the following arguments are required: --port, --vendor"),
    (("hw", "calibrate", "--port", "/dev/null", "--id", "../../x"), "invalid robot id '../../x'"),
])
def test_a_bad_setting_is_one_line_naming_it(user_error, args, message):
    assert message in user_error(*args)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_eval_on_cuda_without_cuda_names_the_devices_there_are(user_error):
    assert user_error("eval", "task=stack", "checkpoint=x", "device=cuda").endswith(
        "device 'cuda' requested but CUDA is not available; valid devices here: auto, cpu")


def test_eval_help_without_a_task_shows_the_config(tmp_path, monkeypatch, capsys):
    from robot_learn.cli.main import main

    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as done:  # Hydra exits after printing help
        main(["eval", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "note: task=... is required (choices: bin_either, bin_place, bin_take" in out
    assert "checkpoint: ???" in out and "episodes: 50" in out


def test_bad_collect_values_create_no_store(user_error, tmp_path):
    assert "episodes must be >= 1, got 0" in user_error("collect", "episodes=0", "out=s.zarr")
    assert "workers must be >= 1, got 0" in user_error("collect", "workers=0", "out=s.zarr")
    assert "workers must be an integer or null, got 'two'" in user_error("collect", "workers=two", "out=s.zarr")
    assert not (tmp_path / "s.zarr").exists()


def test_hitl_with_zero_episodes_creates_no_store(user_error, tmp_path):
    assert "episodes must be >= 1, got 0" in user_error("hitl", "policy_dir=nowhere", "episodes=0", "run_dir=run")
    assert not (tmp_path / "run" / "hitl.zarr").exists()


def test_hitl_with_a_missing_policy_names_it(user_error, tmp_path):
    assert "policy checkpoint directory nowhere does not exist" in user_error(
        "hitl", "policy_dir=nowhere", "run_dir=run")
    assert not (tmp_path / "run" / "hitl.zarr").exists()


def test_hitl_with_a_policy_needing_a_key_the_robot_lacks_names_it_and_creates_no_store(user_error, tmp_path):
    from robot_learn.policies import DiffusionConfig, make_policy

    config = DiffusionConfig(state_dims={"state": 10, "gripper_force": 1}, state_hidden_dims=[8], state_feature_dim=8,
                             down_dims=[8, 16], timestep_embed_dim=8, unet_groups=4, num_inference_steps=2)
    make_policy("diffusion", config).save(tmp_path / "policy")
    line = user_error("hitl", "policy_dir=policy", "run_dir=run")
    assert "the policy needs observation 'gripper_force' but robot SimRobot provides only env_state, objects, state" \
        in line
    assert not (tmp_path / "run" / "hitl.zarr").exists()


@pytest.mark.parametrize(("override", "message"), [
    ("eval.episodes=0", "eval.episodes must be >= 1, got 0"),
    ("eval.vectorization=para", "unknown eval.vectorization 'para'; valid choices: sync, async, auto"),
    ("eval.videos=-1", "eval.videos must be >= 0, got -1"),
    ("eval.seed=x", "eval.seed must be an integer, got 'x'"),
    ("train.steps=abc", "bad train config: steps must be an integer, got 'abc'"),
    ("train.device=bogus", "unknown device 'bogus'"),
    ("policy.obs_horizon=two", "bad policy config: obs_horizon must be an integer, got 'two'"),
    ("policy.down_dims=[100000,200000]", "most of it comes from down_dims=[100000, 200000]"),
    ("data.cache_gb=-1", "data.cache_gb must be >= 0, got -1.0"),
    ("data.cache_gb=inf", "data.cache_gb must be a finite number, got inf"),
    ("data.windows_per_frame=0", "data.windows_per_frame must be >= 0.01, got 0.0"),
])
def test_train_checks_every_setting_before_any_work(user_error, tmp_path, override, message):
    line = user_error("train", "task=stack", "data.path=demos.zarr", "run_dir=run", override)
    assert line.startswith("robot-learn train: error: ") and message in line
    assert not (tmp_path / "demos.zarr").exists()  # no demos were collected
    assert not (tmp_path / "run" / "checkpoints").exists()


def test_inspect_with_an_option_says_it_takes_none(user_error, tmp_path):
    line = user_error("inspect", "store.zarr", "foo=1")
    assert line == ("robot-learn inspect: error: unknown option 'foo'; this command takes no options "
                    "(usage: robot-learn inspect PATH [--verify])")


def test_a_garbage_array_metadata_file_is_named(user_error, tmp_path):
    from robot_learn.envs.demos import collect_demos

    collect_demos("stack", 1, tmp_path / "s.zarr", cameras=(), progress_bar=False)
    (tmp_path / "s.zarr" / "data" / "action" / "zarr.json").write_text("garbage{")
    assert "data/action/zarr.json" in user_error("inspect", "s.zarr")
