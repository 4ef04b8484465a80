"""``robot-learn`` dispatch: help, unknown commands, unknown config options."""

import pytest

from robot_learn.cli.main import SUBCOMMANDS

TASKS = ("stack", "unstack", "peg_insert", "peg_remove", "bin_place", "bin_take")


def test_help_lists_every_subcommand(run_cli):
    out = run_cli("--help")
    assert out.returncode == 0
    assert set(SUBCOMMANDS) >= {"train", "eval", "collect", "inspect", "render-episode", "hw"}
    for name in SUBCOMMANDS:
        assert f"  {name} " in out.stdout


def test_no_arguments_prints_usage_and_fails(run_cli):
    out = run_cli()
    assert out.returncode == 2 and "usage: robot-learn" in out.stdout


def test_unknown_subcommand_lists_valid_ones(run_cli):
    out = run_cli("trian")
    assert out.returncode == 2
    assert "unknown command 'trian'" in out.stderr
    assert "valid commands: " + ", ".join(SUBCOMMANDS) in out.stderr


@pytest.mark.parametrize("command", ["train", "collect", "eval"])
def test_unknown_task_lists_valid_tasks(run_cli, command):
    extra = ("checkpoint=x",) if command == "eval" else ()
    out = run_cli(command, "task=stak", *extra)
    assert out.returncode != 0
    assert "task/stak" in out.stderr
    for task in TASKS:
        assert task in out.stderr


def test_unknown_policy_lists_valid_policies(run_cli):
    out = run_cli("train", "policy=difusion")
    assert out.returncode != 0
    assert "policy/difusion" in out.stderr
    assert "diffusion_state" in out.stderr and "diffusion_image" in out.stderr


def test_eval_without_task_asks_for_one(run_cli):
    out = run_cli("eval", "checkpoint=x")
    assert out.returncode != 0
    assert "You must specify 'task'" in out.stderr and "stack" in out.stderr


def test_hydra_apps_show_their_config(run_cli):
    out = run_cli("train", "--cfg", "job", "task=unstack", "train=fast")
    assert out.returncode == 0, out.stderr
    assert "name: unstack" in out.stdout and "steps: 4" in out.stdout


def test_inspect_missing_store_is_a_clear_error(run_cli, tmp_path):
    out = run_cli("inspect", str(tmp_path / "nope.zarr"))
    assert out.returncode == 2
    assert "no episode store at" in out.stderr and "nope.zarr" in out.stderr
    assert "Traceback" not in out.stderr


def test_inspect_rejects_a_directory_that_is_not_a_store(run_cli, tmp_path):
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "file.txt").write_text("hello")
    out = run_cli("inspect", str(tmp_path / "junk"))
    assert out.returncode == 2
    assert "is not a readable episode store" in out.stderr


def test_render_episode_rejects_unknown_option(run_cli, tmp_path):
    out = run_cli("render-episode", str(tmp_path), "episdoe=1")
    assert out.returncode == 2
    assert "unknown option 'episdoe'" in out.stderr and "episode, out, camera, fps" in out.stderr
