"""The corruption matrix through the CLI: for each kind of damage, ``inspect --verify``,
``train`` and an appending ``collect`` exit 2 with one line naming the array and the
chunk, and leave the store as it was. (The library's part: tests/data/test_store_corruption.py.)"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from robot_learn.cli.main import main
from store_damage import delete, flip, short_commit, snapshot, truncate  # tests/data

TINY_POLICY = ["policy.down_dims=[16,32]", "policy.action_horizon=8", "policy.execute_horizon=4",
               "policy.num_inference_steps=2", "policy.state_hidden_dims=[32]",
               "policy.state_feature_dim=16", "policy.timestep_embed_dim=16"]


ACTION = "array 'data/action' chunk 0 (file data/action/c/0/0, frames 0..{last})"
# kind -> (damage, chunk, what the error says about it)
DAMAGE = {
    "missing data chunk": (delete, "data/action/c/0/0", f"{ACTION} is missing"),
    "truncated data chunk": (truncate, "data/action/c/0/0", f"{ACTION} does not decode"),
    "flipped data chunk": (flip, "data/action/c/0/0", f"{ACTION} does not decode"),
    "inconsistent commit record": (short_commit, "", "the commit record (episode_store.json) says {short} "
                                   "frames but meta/episode_ends ends at {frames}"),
    "missing episode_ends chunk": (delete, "meta/episode_ends/c/0", "array 'meta/episode_ends' chunk 0 "
                                   "(file meta/episode_ends/c/0, episodes 0..1) is missing"),
    "missing task chunk": (delete, "meta/task/c/0", "array 'meta/task' chunk 0 (file meta/task/c/0, "
                           "episodes 0..1) is missing"),
}


@pytest.fixture(scope="module")
def sound_store(tmp_path_factory):
    """Two state-only expert demos of 'stack', collected through the CLI."""
    tmp = tmp_path_factory.mktemp("sound")
    path = tmp / "demos.zarr"
    assert main(["collect", "task=stack", "episodes=2", f"out={path}", "cameras=[]",
                 f"hydra.run.dir={tmp / 'collect'}"]) == 0
    return path


@pytest.fixture(params=list(DAMAGE))
def damaged(request, sound_store, tmp_path, monkeypatch):
    """(path, expected message) of a copy of the sound store with one kind of damage."""
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "demos.zarr"
    shutil.copytree(sound_store, path)
    frames = json.loads((path / "episode_store.json").read_text())["num_frames"]
    damage, chunk, expected = DAMAGE[request.param]
    damage(path, chunk)
    return path, expected.format(last=frames - 1, frames=frames, short=frames - 1)


def run(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().err


def check_one_line_error(code: int, err: str, command: str, path: Path, expected: str) -> None:
    assert code == 2, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith(f"robot-learn {command}: error:")]
    assert len(lines) == 1, err
    assert expected in lines[0] and str(path) in lines[0], lines[0]


def test_inspect_verify_names_the_damage(damaged, capsys):
    path, expected = damaged
    before = snapshot(path)
    code, err = run(capsys, "inspect", str(path), "--verify")
    check_one_line_error(code, err, "inspect", path, expected)
    assert snapshot(path) == before


def test_train_refuses_a_damaged_store(damaged, capsys, tmp_path):
    path, expected = damaged
    before = snapshot(path)
    code, err = run(capsys, "train", "task=stack", "policy=diffusion_state", "train=fast", "train.steps=2",
                    f"data.path={path}", "data.cameras=[]", "eval.episodes=1", "eval.workers=1",
                    "eval.videos=0", f"run_dir={tmp_path / 'run'}", *TINY_POLICY)
    check_one_line_error(code, err, "train", path, expected)
    assert snapshot(path) == before
    assert not (tmp_path / "run" / "policy").exists()  # nothing was trained


def test_append_refuses_a_damaged_store(damaged, capsys, tmp_path):
    path, expected = damaged
    before = snapshot(path)
    code, err = run(capsys, "collect", "task=stack", "episodes=1", "seed=50", f"out={path}", "cameras=[]",
                    f"hydra.run.dir={tmp_path / 'collect'}")
    check_one_line_error(code, err, "collect", path, expected)
    assert snapshot(path) == before


def test_inspect_verify_reports_a_sound_store_and_its_rate(sound_store, run_cli):
    out = run_cli("inspect", str(sound_store), "--verify")
    assert out.returncode == 0, out.stderr
    assert "no damage found" in out.stdout and "MB/s" in out.stdout
    assert "episodes 2" in out.stdout


def test_inspect_verify_exits_2_in_the_console_script(sound_store, tmp_path, run_cli):
    path = tmp_path / "demos.zarr"
    shutil.copytree(sound_store, path)
    flip(path, "data/state/c/0/0")
    out = run_cli("inspect", str(path), "--verify")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "array 'data/state' chunk 0 (file data/state/c/0/0" in out.stderr
