"""`robot-learn hw run-policy` with a policy directory saved by robot_learn.policies,
driving an emulated SO-101 follower through its safety layer."""

import re
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

for _module in ("serial", "dynamixel_sdk", "scservo_sdk"):
    pytest.importorskip(_module)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "hardware"))
from emulator_fixtures import calibrate_files, so101_emulator  # noqa: E402,F401  (fixtures)

from robot_learn.cli.hw import main  # noqa: E402
from robot_learn.hardware import so101_follower  # noqa: E402
from robot_learn.loops.saved_policy_driver import SavedPolicyDriver  # noqa: E402

torch = pytest.importorskip("torch")
from robot_learn.policies import DiffusionConfig, make_policy  # noqa: E402

# Untrained, the policy's actions still lie inside the action statistics (DDIM clips
# normalised samples to [-1, 1]): arm joints 20..40, gripper 60..80 (arm units).
ACTION_LOW = np.array([20, 20, 20, 20, 20, 60], dtype=np.float32)
ACTION_HIGH = ACTION_LOW + 20


def _stats(low, high):
    return {"min": low, "max": high, "mean": (low + high) / 2, "std": (high - low) / 4, "q01": low, "q99": high}


def _save_policy(directory, action_dim=6, state_dim=6, env_state_dim=0):
    torch.manual_seed(0)
    state_dims = {"state": state_dim, **({"env_state": env_state_dim} if env_state_dim else {})}
    config = DiffusionConfig(action_dim=action_dim, state_dims=state_dims, obs_horizon=2, action_horizon=8,
                             execute_horizon=4, state_hidden_dims=[16], state_feature_dim=8, down_dims=[16, 32],
                             timestep_embed_dim=16, num_inference_steps=3)
    low = np.resize(ACTION_LOW, action_dim).astype(np.float32)
    stats = {"action": _stats(low, low + 20)}
    for key, dim in state_dims.items():
        stats[key] = _stats(np.full(dim, -100, np.float32), np.full(dim, 100, np.float32))
    make_policy("diffusion", config, stats).save(directory)
    return str(directory)


@pytest.fixture(autouse=True)
def _one_thread(one_torch_thread):
    """Every test here on one torch thread (tests/conftest.py)."""


class GoalMonitor:
    """Samples every servo's (goal, present) pair atomically while the CLI runs."""

    def __init__(self, emulator):
        self.servos = emulator.servos
        self.samples = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            for sid, s in self.servos.items():
                goal, present = s.table.register("Goal_Position"), s.table.register("Present_Position")
                raw = s.read(goal.address, present.address + present.size - goal.address)  # one locked read
                g = goal.decode(int.from_bytes(raw[:goal.size], "little"))
                off = present.address - goal.address
                p = present.decode(int.from_bytes(raw[off:off + present.size], "little"))
                if s.torque_enabled:
                    self.samples.append((sid, g, p))
            time.sleep(0.003)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


@pytest.mark.parametrize("interpolate", [False, True])
def test_saved_policy_drives_the_arm_within_the_safety_limits(so101_emulator, calibrate_files, tmp_path, capsys,
                                                              interpolate):
    policy_dir = _save_policy(tmp_path / "policy")
    cal_dir = calibrate_files("so101_follower")
    max_step = 4.0
    argv = ["--timeout-ms", "50", "--calibration-dir", cal_dir, "run-policy", "--port", so101_emulator.port,
            "--policy", policy_dir,
            "--hz", "30", "--duration", "2.0", "--max-step", str(max_step)]
    if interpolate:
        argv += ["--interpolate", "--policy-hz", "10"]
    with GoalMonitor(so101_emulator) as monitor:
        code = main(argv)
    out = capsys.readouterr().out
    assert code == 0, out
    clipped = int(out.split("safety clipped ")[1].split()[0])
    assert clipped > 0  # the policy asks for 20..40 from 0: the first steps are clipped
    # Commands reached the servos: they moved from the middle (2048) into the policy's range ...
    arm = so101_follower(so101_emulator.port, calibration_dir=cal_dir, timeout_ms=50)
    arm.connect()
    final = arm.get_observation()
    arm.disconnect()
    for j, name in enumerate(arm.joint_names):
        assert ACTION_LOW[j] - 1 <= final[name] <= ACTION_HIGH[j] + 1, (name, final[name])
    # ... and no goal ever led its servo by more than the allowed step (ticks per arm unit:
    # 2048 / 200 for the arm joints, 2048 / 100 for the gripper; 2x for motion in between).
    assert len(monitor.samples) > 100
    for sid, goal, present in monitor.samples:
        step_ticks = max_step * 2048 / (100 if sid == 6 else 200)
        assert abs(goal - present) <= 2 * step_ticks + 2, (sid, goal, present)
        assert 1024 <= goal <= 3072  # inside the calibrated range
    assert not any(s.torque_enabled for s in so101_emulator.servos.values())


def test_interpolated_driver_plays_chunks_linearly_between_policy_steps(so101_emulator, tmp_path):
    arm = so101_follower(so101_emulator.port)  # not connected: the driver reads only its joint names
    driver = SavedPolicyDriver(_save_policy(tmp_path / "p"), arm, loop_hz=30, interpolate=True, policy_hz=10)
    obs = dict(zip(arm.joint_names, [0.0] * 6))
    # One chunk covers execute_horizon = 4 policy steps = 12 loop ticks: its actions fall on
    # ticks 0, 3, 6, 9 (and the following action, the end point, would be tick 12).
    out = np.array([driver(obs) for _ in range(12)])
    np.testing.assert_allclose(out[1], (2 * out[0] + out[3]) / 3, atol=1e-4)
    np.testing.assert_allclose(out[5], (out[3] + 2 * out[6]) / 3, atol=1e-4)
    np.testing.assert_allclose(out[10] - out[9], out[11] - out[10], atol=1e-4)  # heading to the end point
    assert not np.allclose(out[0], out[3])
    assert driver.interpolator.exhausted  # the next tick predicts a new chunk
    driver(obs)
    assert not driver.interpolator.exhausted


@pytest.mark.parametrize("dims, expected", [
    (dict(action_dim=5), "action dim: policy 5, caller 6"),
    (dict(state_dim=10), r"observation 'state': policy expects \(10,\), caller provides \(6,\)"),
    (dict(env_state_dim=14), "observation 'env_state' is needed but the caller provides only \\['state'\\]"),
])
def test_a_policy_whose_dims_do_not_fit_the_arm_is_refused(so101_emulator, calibrate_files, tmp_path, capsys,
                                                           dims, expected):
    policy_dir = _save_policy(tmp_path / "p", **dims)
    code = main(["--timeout-ms", "50", "--calibration-dir", calibrate_files("so101_follower"), "run-policy", "--port",
                 so101_emulator.port, "--policy", policy_dir, "--duration", "0.1"])
    assert code == 2
    err = capsys.readouterr().err
    assert "does not fit so101_follower: the arm provides 'state' = its 6 joint positions" in err
    assert re.search(expected, err), err
    assert not any(s.torque_enabled for s in so101_emulator.servos.values())


def test_policy_that_is_neither_a_directory_nor_a_callable_is_named(so101_emulator, calibrate_files, capsys):
    code = main(["--timeout-ms", "50", "--calibration-dir", calibrate_files("so101_follower"), "run-policy", "--port",
                 so101_emulator.port, "--policy", "/no/such/policy"])
    assert code == 2
    assert ("--policy must be a policy directory (config.yaml + model.safetensors) or 'module:callable', "
            "got '/no/such/policy'") in capsys.readouterr().err


def test_interpolation_needs_a_policy_directory(so101_emulator, calibrate_files, capsys):
    code = main(["--timeout-ms", "50", "--calibration-dir", calibrate_files("so101_follower"), "run-policy", "--port",
                 so101_emulator.port, "--policy", "builtins:dict", "--interpolate"])
    assert code == 2 and "--interpolate needs a policy directory" in capsys.readouterr().err
