"""`robot-learn hw` against emulated buses (through robot_learn.cli.hw.main)."""

import numpy as np

from robot_learn.cli.hw import main
from robot_learn.data import EpisodeStore


def test_scan_prints_every_emulated_id(koch_emulator, capsys):
    assert main(["scan", "--port", koch_emulator.port, "--vendor", "dynamixel", "--max-id", "8"]) == 0
    out = capsys.readouterr().out
    assert [line.split(":")[0] for line in out.splitlines()] == [f"id {i}" for i in range(1, 7)]
    assert "model number 1060" in out and "model number 1200" in out


def test_unknown_port_is_reported_with_the_ports_found(capsys):
    assert main(["scan", "--port", "/dev/ttyNOPE", "--vendor", "feetech"]) == 2
    assert "'/dev/ttyNOPE' not found; ports found:" in capsys.readouterr().err


def test_unknown_robot_lists_the_valid_robots(so101_emulator, capsys):
    assert main(["calibrate", "--robot", "so100", "--port", so101_emulator.port]) == 2
    assert "unknown robot 'so100'; valid robots: so101_follower" in capsys.readouterr().err


def test_replay_sends_the_stored_actions(so101_emulator, calibrate_files, tmp_path, capsys):
    cal_dir = calibrate_files("so101_follower")
    store = EpisodeStore.create(tmp_path / "s.zarr")
    t = 10
    actions = np.tile(np.array([5, 5, 5, 5, 5, 60], dtype=np.float32), (t, 1))
    store.append_episode({"state": np.zeros((t, 6), np.float32), "action": actions,
                          "policy_action": np.zeros((t, 6), np.float32), "intervention": np.ones(t, bool),
                          "reward": np.zeros(t, np.float32), "progress": np.zeros(t, np.float32),
                          "phase": np.zeros(t, np.int64)},
                         {"task": "stack", "instruction": "", "success": False, "seed": 0, "source": "teleop"})
    code = main(["--calibration-dir", cal_dir, "replay", "--port", so101_emulator.port,
                 "--store", str(tmp_path / "s.zarr"), "--hz", "50"])
    assert code == 0 and "replayed 10 steps" in capsys.readouterr().out
    # gripper goal: 60 of 0..100 over 1024..3072 (step-limited from 50 by 10 per command -> reached)
    assert so101_emulator.servos[6].value("Goal_Position") == round(1024 + 0.6 * 2048)
