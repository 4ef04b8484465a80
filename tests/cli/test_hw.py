"""`robot-learn hw` against emulated buses (through robot_learn.cli.hw.main)."""

import json
import sys
import time
from pathlib import Path

import numpy as np
import pytest

for _module in ("serial", "dynamixel_sdk", "scservo_sdk"):
    pytest.importorskip(_module)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "hardware"))
from emulator_fixtures import (  # noqa: E402,F401  (fixtures)
    calibrate_files, koch_emulator, koch_leader_emulator, so101_emulator, so101_leader_emulator,
)

from robot_learn.cli.hw import main  # noqa: E402
from robot_learn.data import EpisodeStore  # noqa: E402

# Scans that must find every servo present use a 100 ms reply timeout: a margin for a
# loaded machine, where the test process may not be scheduled within the default 20 ms.
SCAN = ["--timeout-ms", "100", "scan"]


def test_scan_prints_every_emulated_id(koch_emulator, capsys):
    assert main([*SCAN, "--port", koch_emulator.port, "--vendor", "dynamixel", "--max-id", "8"]) == 0
    out = capsys.readouterr().out
    assert [line.split(":")[0] for line in out.splitlines()] == [f"id {i}" for i in range(1, 7)]
    assert "model number 1060" in out and "model number 1200" in out


def test_scan_retries_a_dropped_reply_and_every_expected_id_answers(so101_emulator, capsys):
    so101_emulator.inject("drop", count=1, servo_id=3)
    assert main([*SCAN, "--port", so101_emulator.port, "--vendor", "feetech", "--max-id", "6",
                 "--expect", "1-6"]) == 0
    assert [line.split(":")[0] for line in capsys.readouterr().out.splitlines()] == [f"id {i}" for i in range(1, 7)]


def test_scan_finds_the_servo_behind_a_late_reply(koch_emulator, capsys):
    koch_emulator.inject("delay", count=1, delay_s=0.25, servo_id=3)  # against the 100 ms timeout
    assert main([*SCAN, "--port", koch_emulator.port, "--vendor", "dynamixel", "--max-id", "6",
                 "--expect", "1,2,3-6"]) == 0
    assert "id 3: model number 1200" in capsys.readouterr().out


def test_scan_exits_nonzero_naming_expected_ids_that_stay_silent(capsys):
    from robot_learn.hardware.emulator import ServoBusEmulator

    with ServoBusEmulator("feetech", [(i, "sts3215") for i in (1, 2, 4, 5)]) as emu:
        code = main([*SCAN, "--port", emu.port, "--vendor", "feetech", "--max-id", "6", "--retries", "1",
                     "--expect", "1-6"])
    assert code == 1
    captured = capsys.readouterr()
    assert [line.split(":")[0] for line in captured.out.splitlines()] == ["id 1", "id 2", "id 4", "id 5"]
    assert captured.err == (f"robot-learn hw scan: expected ids did not answer on {emu.port}: 3, 6 "
                            f"(2 pings each, timeout 100 ms)\n")


def test_scan_without_retries_reports_the_servo_a_dropped_reply_hid(so101_emulator, capsys):
    so101_emulator.inject("drop", count=1, servo_id=3)
    assert main([*SCAN, "--port", so101_emulator.port, "--vendor", "feetech", "--max-id", "6", "--retries", "0",
                 "--expect", "1-6"]) == 1
    assert "expected ids did not answer on " in capsys.readouterr().err


def test_scan_expects_ids_above_max_id_too(so101_emulator, capsys):
    assert main([*SCAN, "--port", so101_emulator.port, "--vendor", "feetech", "--max-id", "2",
                 "--expect", "6"]) == 0
    assert "id 6: model number 777" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["--expect", "1-x"], "--expect '1-x': '1-x' is not an id or a range; write ids like 1-6 or 1,2,5"),
    (["--expect", "1,,2"], "--expect '1,,2': '' is not an id or a range"),
    (["--expect", "6-1"], "--expect '6-1': '6-1' must be ids 0..252, low to high"),
    (["--expect", "300"], "--expect '300': '300' must be ids 0..252, low to high"),
    (["--retries", "-1"], "--retries must be >= 0, got -1"),
    (["--max-id", "253"], "--max-id must be in 0..252, got 253"),
])
def test_scan_options_out_of_range_are_one_line_errors(so101_emulator, capsys, argv, message):
    assert main(["scan", "--port", so101_emulator.port, "--vendor", "feetech", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err


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
    code = main(["--timeout-ms", "50", "--calibration-dir", cal_dir, "replay", "--port", so101_emulator.port,
                 "--store", str(tmp_path / "s.zarr"), "--hz", "50"])
    assert code == 0 and "replayed 10 steps" in capsys.readouterr().out
    # gripper goal: 60 of 0..100 over 1024..3072 (step-limited from 50 by 10 per command -> reached)
    assert so101_emulator.servos[6].value("Goal_Position") == round(1024 + 0.6 * 2048)


# -- find-port ------------------------------------------------------------------------

def test_find_port_names_the_adapter_that_was_unplugged(tmp_path, capsys):
    from robot_learn.hardware.emulator import ServoBusEmulator

    # Two "adapters" (emulator ptys) behind udev-style by-id symlinks; unplugging one
    # closes its pty, so its link dangles and drops out of the listing.
    by_id = tmp_path / "by-id"
    by_id.mkdir()
    with ServoBusEmulator("feetech", [(1, "sts3215")]) as arm_a, ServoBusEmulator("feetech", [(1, "sts3215")]) as arm_b:
        (by_id / "usb-arm-a").symlink_to(arm_a.port)
        (by_id / "usb-arm-b").symlink_to(arm_b.port)
        prompts = []

        def operator(prompt: str) -> str:
            prompts.append(prompt)
            if len(prompts) == 1:
                arm_b.stop()  # the operator pulls arm B's cable
            return ""

        code = main(["find-port", "--pattern", str(by_id / "*"), "--settle", "0"], input_fn=operator)
    assert code == 0
    assert capsys.readouterr().out.splitlines()[-1] == str(by_id / "usb-arm-b")
    assert "Unplug" in prompts[0] and "usb-arm-b" in prompts[1]


def test_find_port_without_an_unplug_says_no_port_disappeared(tmp_path, capsys):
    from robot_learn.hardware.emulator import ServoBusEmulator

    with ServoBusEmulator("feetech", [(1, "sts3215")]) as emu:
        (tmp_path / "usb-arm").symlink_to(emu.port)
        code = main(["find-port", "--pattern", str(tmp_path / "usb-*"), "--settle", "0"], input_fn=lambda _: "")
    assert code == 2
    err = capsys.readouterr().err
    assert "0 ports disappeared" in err and str(tmp_path / "usb-arm") in err


# -- calibrate --------------------------------------------------------------------------

def test_calibrate_is_scripted_through_the_prompts(so101_emulator, tmp_path, capsys):
    servos = so101_emulator.servos

    def operator(prompt: str) -> str:
        if "middle" in prompt:
            for s in servos.values():
                s.move_by_hand(2048)
        else:  # "move every joint through its full range", then Enter
            for pos in (1100, 3000, 2048):
                for s in servos.values():
                    s.move_by_hand(pos)
                time.sleep(0.05)
        return ""

    code = main(["--timeout-ms", "50", "--calibration-dir", str(tmp_path), "calibrate",
                 "--port", so101_emulator.port, "--id", "lab1"],
                input_fn=operator)
    assert code == 0
    path = tmp_path / "so101_follower" / "lab1.json"
    assert f"saved {path} (6 joints)" in capsys.readouterr().out
    cal = json.loads(path.read_text())
    assert cal["wrist_roll"] == {"id": 5, "drive_mode": 0, "homing_offset": 0, "range_min": 1100, "range_max": 3000}
    assert not any(s.torque_enabled for s in servos.values())


def test_calibrate_with_a_joint_that_never_moves_fails_clearly(so101_emulator, tmp_path, capsys):
    code = main(["--timeout-ms", "50", "--calibration-dir", str(tmp_path), "calibrate", "--port", so101_emulator.port],
                input_fn=lambda _: "")
    assert code == 2
    assert "did not move during calibration" in capsys.readouterr().err
    assert not (tmp_path / "so101_follower" / "default.json").exists()


# -- teleop and record -----------------------------------------------------------------

def _teleop_args(leader_emu, follower_emu, cal_dir, command="teleop", duration="0.5"):
    return ["--timeout-ms", "50", "--calibration-dir", cal_dir, command, "--leader-port", leader_emu.port,
            "--follower-port", follower_emu.port, "--hz", "30", "--duration", duration]


def test_teleop_moves_the_follower_to_the_leader(so101_emulator, so101_leader_emulator, calibrate_files, capsys):
    """The safety layer moves the follower at most 10 units a command, so the distance needs a number of ticks; a
    loaded CI machine dropped ticks of a 0.5 s episode (the follower stopped at 2405), so this one runs 2 s."""
    for s in so101_leader_emulator.servos.values():
        s.move_by_hand(2560)
    code = main(_teleop_args(so101_leader_emulator, so101_emulator,
                             calibrate_files("so101_follower", "so101_leader"), duration="2.0"))
    assert code == 0 and "episode 0:" in capsys.readouterr().out
    present = [s.value("Present_Position") for s in so101_emulator.servos.values()]
    assert all(abs(p - 2560) <= 10 for p in present), present  # reached through 10-unit steps
    assert not any(s.torque_enabled for s in so101_emulator.servos.values())


def test_record_appends_teleop_episodes_to_a_valid_store(so101_emulator, so101_leader_emulator, calibrate_files,
                                                         tmp_path, capsys):
    for s in so101_leader_emulator.servos.values():
        s.move_by_hand(1536)  # -50 for the arm joints, 25 for the gripper
    store_path = tmp_path / "rec.zarr"
    args = _teleop_args(so101_leader_emulator, so101_emulator, calibrate_files("so101_follower", "so101_leader"),
                        "record")
    code = main(args + ["--store", str(store_path), "--task", "stack", "--instruction", "stack it",
                        "--episodes", "2", "--operator", "ana"])
    assert code == 0 and "recorded episode 1" in capsys.readouterr().out
    store = EpisodeStore.open(store_path)
    assert store.num_episodes == 2
    for i in range(2):
        ep = store.episode(i)
        steps, meta = ep["steps"], ep["meta"]
        t = len(steps["action"])
        assert 5 <= t <= 16  # 0.5 s at 30 Hz
        assert steps["state"].shape == (t, 6) and steps["intervention"].all()
        np.testing.assert_allclose(steps["action"][:, 2], -50.0, atol=0.1)
        assert meta["source"] == "teleop" and meta["task"] == "stack" and meta["operator"] == "ana"
        assert meta["instruction"] == "stack it" and meta["seed"] == i
    assert store.episode(0)["steps"]["state"][-1, 2] == pytest.approx(-50.0, abs=1.0)  # follower got there


def test_teleop_with_a_koch_gripper_trigger_on_a_so101_leader_is_refused(so101_emulator, so101_leader_emulator,
                                                                         calibrate_files, capsys):
    args = _teleop_args(so101_leader_emulator, so101_emulator, calibrate_files("so101_follower", "so101_leader"))
    assert main(args + ["--leader-gripper-trigger", "20"]) == 2
    assert "--leader-gripper-trigger needs --leader-robot koch_leader, got 'so101_leader'" in capsys.readouterr().err


def test_commands_on_an_uncalibrated_arm_name_the_missing_file(so101_emulator, tmp_path, capsys):
    code = main(["--timeout-ms", "50", "--calibration-dir", str(tmp_path), "run-policy", "--port", so101_emulator.port,
                 "--id", "arm9", "--policy", "builtins:dict", "--duration", "0.1"])
    assert code == 2
    err = capsys.readouterr().err
    assert "arm9.json not found; create it with `robot-learn hw calibrate --robot so101_follower" in err
    assert not any(s.torque_enabled for s in so101_emulator.servos.values())


def test_teleop_koch_with_the_leader_gripper_as_a_trigger(koch_emulator, koch_leader_emulator, calibrate_files,
                                                           capsys):
    args = _teleop_args(koch_leader_emulator, koch_emulator, calibrate_files("koch_follower", "koch_leader"))
    args += ["--leader-robot", "koch_leader", "--follower-robot", "koch_follower", "--leader-gripper-trigger", "20"]
    assert main(args) == 0, capsys.readouterr().err
    # the leader's gripper sprang from the middle (2048) toward its rest position (20 of 0..100
    # over 1024..3072 = 1434 ticks; a 150 ms spring), and the follower's gripper followed it
    assert koch_emulator.servos[6].value("Goal_Position") == pytest.approx(1024 + 0.2 * 2048, abs=45)
    assert not any(s.torque_enabled for s in koch_leader_emulator.servos.values())


def test_calibrate_with_a_path_as_id_writes_nothing_and_asks_nothing(so101_emulator, tmp_path, capsys):
    def operator(prompt: str) -> str:
        raise AssertionError(f"the operator was asked to calibrate: {prompt}")

    calib = tmp_path / "calib" / "dir"
    code = main(["--calibration-dir", str(calib), "calibrate", "--port", so101_emulator.port, "--id", "../../x"],
                input_fn=operator)
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("robot-learn hw: error: invalid robot id '../../x'") and err.count("\n") == 1
    assert "Traceback" not in err
    assert not list(tmp_path.rglob("*.json"))
