"""The video world model on a real (tiny) zarr store of MuJoCo bin_place demos.

One module-scoped store (3 expert episodes, front camera at 32 px) and one tiny
model trained a few dozen steps with the policies' Trainer serve every test.
"""

import math

import numpy as np
import pytest
import torch

from robot_learn.data import EpisodeStore
from robot_learn.envs.demos import collect_demos
from robot_learn.evaluation import evaluate
from robot_learn.policies import IncompatiblePolicyError, diffusion_image_config, make_policy
from robot_learn.training import TrainConfig
from robot_learn.world_models import WorldModelConfig, WorldModelLoadError, load_world_model
from robot_learn.world_models.env import WorldModelEnv
from robot_learn.world_models.fidelity import measure_fidelity, write_fidelity_report
from robot_learn.world_models.rollout import (WorldModelEnvFactory, check_policy_fits, generate_rollouts,
                                              task_spaces)
from robot_learn.world_models.training import make_sampler, split_store, train_world_model

SIZE = 32


def tiny_config(**overrides):
    return WorldModelConfig(image_size=SIZE, space_to_depth=2, block_out_channels=(16, 32), state_hidden=32,
                            **overrides)


def tiny_pixel_policy(cameras=("front",), size=SIZE):
    config = diffusion_image_config(camera_names=list(cameras), image_size=size, crop_size=size - 4,
                                    vision_channels=[8, 16], text_encoder="none", down_dims=[16, 32],
                                    action_horizon=8, execute_horizon=4, num_inference_steps=2,
                                    timestep_embed_dim=16)
    torch.manual_seed(0)
    return make_policy("diffusion", config, stats=None)


@pytest.fixture(scope="module")
def store_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("wm") / "bin_place_front_32.zarr"
    collect_demos("bin_place", 3, path, cameras=("front",), image_size=SIZE, max_steps=25,
                  keep_failures=True, progress_bar=False)
    return path


def train_tiny(store_path, config, out):
    """``config`` trained 40 steps at batch 16 on ``store_path`` (its last episode held out), saved in ``out``."""
    torch.set_num_threads(1)
    train = TrainConfig(steps=40, batch_size=16, lr=2e-3, warmup_steps=5, out_dir=str(out), resume=False,
                        progress_bar=False, log_every=10, ckpt_every=0, device="cpu", seed=0)
    torch.manual_seed(0)
    model, _ = train_world_model(store_path, config, train, held_out=1)
    return model, out


@pytest.fixture(scope="module")
def trained(store_path, tmp_path_factory):
    return train_tiny(store_path, tiny_config(), tmp_path_factory.mktemp("wm_run"))


def training_transitions(model, store_path):
    """Every training transition with a real predecessor, as one sampler batch for ``model``."""
    with EpisodeStore.open(store_path, mode="r") as store:
        view = split_store(store, 1).train
        lengths = [store.episode_ends[e] - store.episode_starts[e] for e in view.episodes]
        episodes = np.repeat(view.episodes, lengths)
        t = np.concatenate([np.arange(n) for n in lengths])
        return make_sampler(view, model.config, batch_size=1).batch_at(episodes[t >= 1], t[t >= 1])


def one_step_errors(model, store_path):
    """Mean squared pixel error of the model and of copy-last on every training transition."""
    batch = training_transitions(model, store_path)
    frames = torch.as_tensor(batch["obs"]["images"]["front"])
    k = model.config.history
    out = model.predict_next(frames[:, :k], torch.as_tensor(batch["obs"]["state"][:, :k]),
                             torch.as_tensor(batch["action"][:, k - 1]))
    real = frames[:, k].float()
    return float(((out["frame"] - real) ** 2).mean()), float(((frames[:, k - 1].float() - real) ** 2).mean())


def test_trained_model_beats_copy_last_frame_one_step(trained, store_path):
    model, _ = trained
    model_mse, copy_mse = one_step_errors(model, store_path)
    assert model_mse < 0.8 * copy_mse, f"model {model_mse:.1f}, copy-last {copy_mse:.1f}"
    print(f"one-step MSE: model {model_mse:.1f}, copy-last {copy_mse:.1f}")


def test_untrained_model_is_exactly_copy_last_frame(store_path):
    torch.manual_seed(0)
    from robot_learn.world_models import VideoWorldModel

    model_mse, copy_mse = one_step_errors(VideoWorldModel(tiny_config()).eval(), store_path)
    assert math.isclose(model_mse, copy_mse, rel_tol=1e-4)


def test_checkpoint_round_trips_and_is_refused_on_another_suite(trained, store_path):
    model, run = trained
    loaded = load_world_model(run, task="bin_place")
    for a, b in zip(model.state_dict().values(), loaded.state_dict().values()):
        assert torch.equal(a, b)
    with pytest.raises(WorldModelLoadError, match=r"suite 'robot_learn'.*'metaworld/drawer-close'.*'metaworld'"):
        load_world_model(run, task="metaworld/drawer-close")


def test_fidelity_reports_psnr_and_ssim_per_step_with_plot(trained, store_path, tmp_path):
    model, _ = trained
    with EpisodeStore.open(store_path, mode="r") as store:
        report = measure_fidelity(model, split_store(store, 1).held_out, horizon=4, stride=5)
    assert len(report.model_psnr) == len(report.copy_last_ssim) == len(report.model_psnr_moved) == 4
    assert report.rollouts >= 2 and all(0 <= m <= 1 for m in report.moved_fraction)
    assert all(0 < s <= 1 for s in report.model_ssim)
    paths = write_fidelity_report(report, tmp_path, "tiny")
    assert paths["plot"].stat().st_size > 1000 and "| 4 |" in paths["markdown"].read_text()


def test_moved_pixel_psnr_scores_only_what_left_the_start_frame():
    from robot_learn.world_models.fidelity import _moved_psnr

    start = torch.zeros(1, 8, 8, 3, dtype=torch.uint8)
    real = start.clone()
    real[0, :2, :2] = 200  # 4 of 64 pixels moved
    noisy_background = real.clone()
    noisy_background[0, 4:, 4:] = 10  # wrong where nothing moved: not counted
    (exact, copy_last), moved = _moved_psnr((noisy_background, start), real, start)  # one mask for both
    assert exact == 100.0 and moved == 4 / 64
    assert copy_last == pytest.approx(10 * math.log10(255 ** 2 / 200 ** 2), abs=1e-4)  # misses by 200 levels
    assert _moved_psnr((real,), start, start) == ([100.0], 0.0)  # nothing moved


def test_any_policy_runs_in_the_world_model_through_evaluate(trained, store_path):
    _, run = trained
    factory = WorldModelEnvFactory(str(run), str(store_path))
    result = evaluate(tiny_pixel_policy(), "bin_place", episodes=2, workers=1, videos=0, max_steps=4,
                      conditions=factory)
    assert [ep.length for ep in result.episodes] == [4, 4]
    assert all(0.0 <= ep.progress <= 1.0 for ep in result.episodes)


def test_env_observations_match_the_mujoco_contract(trained, store_path):
    model, _ = trained
    with EpisodeStore.open(store_path, mode="r") as store:
        env = WorldModelEnv(model, split_store(store, 1).held_out, *task_spaces("bin_place"), max_steps=3)
        obs, info = env.reset(seed=0)
        assert env.observation_space.contains(obs) and obs["instruction"]
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        assert {"success", "progress", "phase"} <= set(info) and obs["images"]["front"].dtype == np.uint8
        with pytest.raises(ValueError, match=r"shape \(5,\)"):
            env.step(np.zeros(3, np.float32))


def test_rollouts_are_written_as_synthetic_episodes(trained, store_path, tmp_path):
    model, _ = trained
    out = tmp_path / "synthetic.zarr"
    with EpisodeStore.open(store_path, mode="r") as store:
        env = WorldModelEnv(model, split_store(store, 1).train, *task_spaces("bin_place"), max_steps=3)
        summary = generate_rollouts(tiny_pixel_policy(), env, 2, out, policy_id="tiny")
    assert summary.written == 2 and not summary.stopped
    with EpisodeStore.open(out, mode="r") as synthetic:
        assert list(synthetic.meta["source"]) == ["synthetic", "synthetic"]
        assert synthetic.array("images/front").shape[1:] == (SIZE, SIZE, 3)


def test_rollouts_on_ray_workers_are_the_episodes_one_process_imagines(trained, store_path, tmp_path,
                                                                       assert_same_episodes_by_seed):
    """4 seeds over 2 Ray workers (one writer) against one process: per seed, the same
    actions, frames and states (the env and the policy are seeded per episode)."""
    ray = pytest.importorskip("ray")  # the fleet extra; `make test` installs it
    from robot_learn.fleet import start_ray
    from robot_learn.fleet.parallel_jobs import generate_rollouts_on_ray
    from robot_learn.world_models.rollout import rollout_env

    model, run = trained
    policy = tiny_pixel_policy()
    with rollout_env(model, store_path, max_steps=3) as env:
        local = generate_rollouts(policy, env, 4, tmp_path / "local.zarr", seed=10, policy_id="tiny")
    start_ray(num_cpus=2)
    try:
        remote = generate_rollouts_on_ray(policy, run, store_path, 4, tmp_path / "ray.zarr", workers=2, seed=10,
                                          max_steps=3, policy_id="tiny")
    finally:
        ray.shutdown()
    assert (remote.written, remote.successes, remote.stopped) == (local.written, local.successes, local.stopped)
    assert remote.written == 4
    with EpisodeStore.open(tmp_path / "ray.zarr", mode="r") as written:
        assert set(written.meta["source"]) == {"synthetic"}
    assert_same_episodes_by_seed(tmp_path / "local.zarr", tmp_path / "ray.zarr", ("action", "state", "images/front"),
                                 [10, 11, 12, 13])


def test_nan_frames_stop_the_rollout_and_nothing_is_written(store_path, tmp_path):
    from robot_learn.world_models import VideoWorldModel

    model = VideoWorldModel(tiny_config()).eval()
    with torch.no_grad():
        model.unet.conv_out.bias.fill_(float("nan"))
    out = tmp_path / "never.zarr"
    with EpisodeStore.open(store_path, mode="r") as store:
        env = WorldModelEnv(model, split_store(store, 1).train, *task_spaces("bin_place"), max_steps=3)
        summary = generate_rollouts(tiny_pixel_policy(), env, 1, out)
    assert summary.written == 0 and len(summary.stopped) == 1
    assert "NaN" in summary.stopped[0] and not out.exists()


def test_out_of_range_frames_stop_the_rollout(store_path):
    from robot_learn.world_models import VideoWorldModel

    model = VideoWorldModel(tiny_config()).eval()
    with torch.no_grad():
        model.unet.conv_out.bias.fill_(50.0)  # +50 in [-1, 1] units: thousands of pixel units
    with EpisodeStore.open(store_path, mode="r") as store:
        env = WorldModelEnv(model, split_store(store, 1).train, *task_spaces("bin_place"), max_steps=3)
        env.reset(seed=0)
        *_, truncated, info = env.step(env.action_space.sample())
    assert truncated and "out of range" in info["imagination_error"]


def test_policy_of_other_cameras_or_size_is_refused_naming_both(trained):
    model, _ = trained
    with pytest.raises(ValueError, match=r"policy reads cameras \['front', 'wrist'\] at 32 px; "
                                         r"the world model imagines \['front'\] at 32 px"):
        check_policy_fits(tiny_pixel_policy(("front", "wrist")), model, 5)
    with pytest.raises(ValueError, match=r"at 64 px; the world model imagines \['front'\] at 32 px"):
        check_policy_fits(tiny_pixel_policy(size=64), model, 5)
    with pytest.raises(IncompatiblePolicyError, match=r"action dim: policy 5, caller 6"):
        check_policy_fits(tiny_pixel_policy(), model, 6)


def test_diffusion_head_trains_and_samples_in_few_steps():
    from robot_learn.world_models import VideoWorldModel

    torch.manual_seed(0)
    model = VideoWorldModel(tiny_config(head="diffusion", sampling_steps=3))
    b, k = 2, model.config.history
    frames = torch.randint(0, 255, (b, k + 1, SIZE, SIZE, 3), dtype=torch.uint8)
    batch = {"obs": {"images": {"front": frames}, "state": torch.randn(b, k + 1, 10)},
             "action": torch.randn(b, k, 5), "t": torch.ones(b, dtype=torch.long)}
    loss = model.compute_loss(batch)["loss"]
    loss.backward()
    assert torch.isfinite(loss) and model.unet.conv_out.weight.grad.abs().sum() > 0
    out = model.eval().predict_next(frames[:, :k], batch["obs"]["state"][:, :k], batch["action"][:, 0],
                                    generator=torch.Generator().manual_seed(0))
    assert out["frame"].shape == (b, SIZE, SIZE, 3) and torch.isfinite(out["frame"]).all()


@pytest.mark.parametrize(("bias", "floor", "change"), [(0.05, 16.0, 0.0), (0.05, 0.0, 6.375), (0.2, 16.0, 25.5)])
def test_changes_under_the_floor_keep_the_last_frame(bias, floor, change):
    """A change of 0.05 (6.4 pixel levels) everywhere is dropped under a 16-level floor and
    kept without one; a change of 25.5 levels passes the floor."""
    from robot_learn.world_models import VideoWorldModel

    model = VideoWorldModel(tiny_config(change_floor=floor)).eval()
    torch.nn.init.constant_(model.unet.conv_out.bias, bias)
    frames = torch.full((1, model.config.history, SIZE, SIZE, 3), 100, dtype=torch.uint8)
    out = model.predict_next(frames, torch.zeros(1, model.config.history, 10), torch.zeros(1, 5))
    assert torch.allclose(out["frame"] - 100.0, torch.full_like(out["frame"], change), atol=1e-3)


def test_diffusion_head_samples_from_the_noise_it_was_trained_on():
    """The sampler's first step is the scheduler's last timestep, where training's noisy
    input is pure noise: the linear schedule at 100 timesteps left 60% of the signal there
    (alphas_cumprod 0.36), so sampling from N(0, 1) started off what training saw."""
    from robot_learn.world_models import VideoWorldModel

    model = VideoWorldModel(tiny_config(head="diffusion", sampling_steps=3, delta_scale=8.0))
    model.sample_scheduler.set_timesteps(3)
    assert int(model.sample_scheduler.timesteps[0]) == model.config.num_train_timesteps - 1
    assert float(model.train_scheduler.alphas_cumprod[-1]) < 1e-3
    assert float(model.train_scheduler.alphas_cumprod[0]) > 0.99
    with pytest.raises(ValueError, match="world-model delta_scale must be > 0; got 0.0"):
        tiny_config(head="diffusion", delta_scale=0.0)
    with pytest.raises(ValueError, match=r"world-model change_floor must be in \[0, 255\) pixel levels; got -1.0"):
        tiny_config(change_floor=-1.0)
