"""``robot-learn hitl`` on the MuJoCo twin with the simulated operator: a tiny policy
trained here on two expert demos drives two short episodes; the store gets them."""

import json

import numpy as np
import pytest
import torch

from robot_learn.data import EpisodeStore, WindowSampler
from robot_learn.policies import DiffusionPolicy, diffusion_state_config, to_torch

EPISODES, MAX_STEPS = 2, 12


@pytest.fixture(scope="module")
def policy_dir(tmp_path_factory):
    """A tiny state-only diffusion policy, 5 training steps on 2 expert demos, saved."""
    from robot_learn.envs.demos import collect_demos

    torch.set_num_threads(1)
    torch.manual_seed(0)
    tmp = tmp_path_factory.mktemp("policy")
    collect_demos("stack", 2, tmp / "demos.zarr", cameras=(), progress_bar=False)
    store = EpisodeStore.open(tmp / "demos.zarr")
    config = diffusion_state_config(obs_horizon=2, action_horizon=8, execute_horizon=4, down_dims=[16, 32],
                                    state_hidden_dims=[32], state_feature_dim=16, timestep_embed_dim=16,
                                    num_train_timesteps=50, num_inference_steps=2)
    policy = DiffusionPolicy(config, stats=store.stats(["action", *config.state_dims]))
    sampler = WindowSampler(store, obs_keys=tuple(config.state_dims), obs_horizon=2, action_horizon=8,
                            batch_size=8, seed=0)
    optimiser = torch.optim.Adam(policy.parameters(), lr=1e-3)
    for _ in range(5):
        loss = policy.compute_loss(to_torch(sampler.sample()))["loss"]
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    policy.save(tmp / "policy")
    return tmp / "policy"


def test_hitl_session_records_tagged_timestamped_episodes(run_cli, tmp_path, policy_dir):
    out = run_cli("hitl", "robot=sim_so101", "operator=simulated", f"policy_dir={policy_dir}",
                  f"episodes={EPISODES}", f"task.max_steps={MAX_STEPS}", "round=3", "run_dir=run",
                  "operator.reaction_steps=1", "operator.rule.stall_steps=2", timeout=180)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "store: run/hitl.zarr (2 episodes)" in out.stdout
    store = EpisodeStore.open(tmp_path / "run/hitl.zarr")
    assert store.num_episodes == EPISODES
    human_steps = 0
    for i in range(EPISODES):
        episode = store.episode(i)
        steps, meta = episode["steps"], episode["meta"]
        length = len(steps["action"])
        assert 1 <= length <= MAX_STEPS
        assert steps["intervention"].dtype == bool and steps["intervention"].shape == (length,)
        assert meta["source"] == ("intervention" if steps["intervention"].any() else "rollout")
        assert (meta["round"], meta["operator"], meta["policy_id"]) == (3, "simulated", str(policy_dir))
        assert steps["timestamp"].shape == (length,) and np.all(np.diff(steps["timestamp"]) > 0)
        human_steps += int(steps["intervention"].sum())
    # The tiny policy stalls, so the operator takes over: human steps are recorded.
    assert human_steps > 0
    first, second = (store.episode(i)["steps"]["timestamp"] for i in range(2))
    assert first[-1] < second[0]
    log = [json.loads(line) for line in (tmp_path / "run/hitl.sessions.jsonl").read_text().splitlines()]
    assert [(e["index"], e["round"]) for e in log] == [(0, 3), (1, 3)]


def test_unknown_operator_lists_the_valid_ones(run_cli, tmp_path):
    out = run_cli("hitl", "operator=joystick", "policy_dir=nowhere")
    assert out.returncode != 0
    assert "Could not find 'operator/joystick'" in out.stderr and "Available options in 'operator'" in out.stderr
    for name in ("gamepad", "keyboard", "simulated", "spacemouse"):
        assert name in out.stderr


@pytest.fixture(scope="module")
def camera_policy_dir(tmp_path_factory):
    """A tiny untrained policy that reads the front and wrist cameras at 32 px (and state),
    saved: what a pixel policy asks of the robot."""
    from robot_learn.envs.demos import collect_demos
    from robot_learn.policies import diffusion_image_config

    torch.manual_seed(0)
    tmp = tmp_path_factory.mktemp("camera_policy")
    collect_demos("stack", 1, tmp / "demos.zarr", cameras=("front", "wrist"), image_size=32, progress_bar=False)
    store = EpisodeStore.open(tmp / "demos.zarr")
    config = diffusion_image_config(image_size=32, crop_size=28, vision_channels=[8, 16], action_horizon=8,
                                    execute_horizon=4, down_dims=[16, 32], timestep_embed_dim=16,
                                    num_train_timesteps=50, num_inference_steps=2,
                                    vocab=sorted(set(" ".join(store.meta["instruction"]).split())))
    DiffusionPolicy(config, stats=store.stats(["action", "state"])).save(tmp / "policy")
    return tmp / "policy"


def test_the_robot_renders_the_cameras_a_saved_pixel_policy_reads(run_cli, tmp_path, camera_policy_dir):
    """The policy group stays the default (state only, no cameras); the robot still gets the
    saved policy's cameras at its frame size, and says so."""
    out = run_cli("hitl", "robot=sim_so101", "operator=simulated", f"policy_dir={camera_policy_dir}", "episodes=1",
                  "task.max_steps=6", "run_dir=run", timeout=180)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "robot: cameras ['front', 'wrist'], image_size 32 (what the policy reads)" in out.stdout
    assert EpisodeStore.open(tmp_path / "run/hitl.zarr").num_episodes == 1


def test_the_consoles_own_camera_stays_first_and_the_policys_are_added(camera_policy_dir):
    """The console's robot node sets its tile camera itself; a loaded policy's cameras join it."""
    from omegaconf import OmegaConf

    from robot_learn.cli.policy_dirs import robot_settings_for_policy
    from robot_learn.policies import load_policy

    policy = load_policy(camera_policy_dir)
    console_robot = OmegaConf.create({"task": "stack", "cameras": ["wrist"], "image_size": 96})
    assert robot_settings_for_policy(console_robot, policy) == {"cameras": ["wrist", "front"], "image_size": 32}
    assert robot_settings_for_policy(OmegaConf.create({"task": "stack"}), policy) == {}  # a robot without cameras
