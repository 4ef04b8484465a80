"""`robot-learn import-lerobot` / `export-lerobot` from the command line."""

from __future__ import annotations

from robot_learn.cli.main import main
from robot_learn.data import EpisodeStore


def test_cli_exports_and_imports(hitl_store, tmp_path, capsys):
    assert main(["export-lerobot", str(hitl_store), "--out", str(tmp_path / "lr"),
                 "--repo-id", "lab/hitl"]) == 0
    assert "wrote LeRobotDataset v3 'lab/hitl'" in capsys.readouterr().out
    assert main(["import-lerobot", str(tmp_path / "lr"), "--out", str(tmp_path / "back"),
                 "--camera", "front", "--fps", "10"]) == 0
    assert "imported 2 episodes (11 frames, 10 fps)" in capsys.readouterr().out
    assert EpisodeStore.open(tmp_path / "back").num_episodes == 2


def test_cli_bad_input_exits_2_with_one_line(lerobot_root, tmp_path, capsys):
    assert main(["import-lerobot", str(lerobot_root), "--out", str(tmp_path / "s"),
                 "--camera", "top"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("robot-learn import-lerobot: error: camera 'top' is not in")
    assert main(["export-lerobot", str(tmp_path / "nope"), "--out", str(tmp_path / "o")]) == 2
    assert "robot-learn export-lerobot: error:" in capsys.readouterr().err
