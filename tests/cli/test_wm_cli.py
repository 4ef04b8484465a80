"""robot-learn wm rollout / eval / train: one-line errors that write nothing, and a rollout
that writes synthetic episodes (in-process, on a real 2-episode MuJoCo store)."""

import numpy as np
import pytest
import torch

from robot_learn.cli.wm import main
from robot_learn.data import EpisodeStore
from robot_learn.envs.demos import collect_demos
from robot_learn.policies import diffusion_image_config, make_policy
from robot_learn.world_models import VideoWorldModel, WorldModelConfig


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("wm_cli")
    store = root / "starts.zarr"
    collect_demos("bin_place", 2, store, cameras=("front",), image_size=32, max_steps=8, keep_failures=True,
                  progress_bar=False)
    torch.manual_seed(0)
    VideoWorldModel(WorldModelConfig(image_size=32, space_to_depth=2, block_out_channels=(16, 32),
                                     state_hidden=32)).save(root / "wm")
    policies = {}
    for name, cams, size in (("fits", ["front"], 32), ("two_cams", ["front", "wrist"], 96)):
        config = diffusion_image_config(camera_names=cams, image_size=size, crop_size=size - 4, vision_channels=[8],
                                        text_encoder="none", down_dims=[16], action_horizon=4, execute_horizon=2,
                                        num_inference_steps=1, timestep_embed_dim=8)
        make_policy("diffusion", config, stats=None).save(root / name)
        policies[name] = root / name
    return root, store, policies


def run(capsys, monkeypatch, tmp_path, *args):
    monkeypatch.chdir(tmp_path)  # Hydra's run dirs land here
    code = main(list(args))
    return code, capsys.readouterr()


def test_rollout_refuses_a_policy_of_other_cameras_naming_both_and_writes_nothing(setup, capsys, monkeypatch,
                                                                                    tmp_path):
    root, store, policies = setup
    out = tmp_path / "synthetic.zarr"
    code, captured = run(capsys, monkeypatch, tmp_path, "rollout", f"checkpoint={root / 'wm'}",
                         f"policy_dir={policies['two_cams']}", f"store={store}", f"out={out}")
    assert code == 2 and not out.exists()
    assert captured.err.count("\n") == 1
    assert ("policy reads cameras ['front', 'wrist'] at 96 px; the world model imagines ['front'] at 32 px"
            in captured.err)


def test_rollout_writes_synthetic_episodes(setup, capsys, monkeypatch, tmp_path):
    root, store, policies = setup
    out = tmp_path / "synthetic.zarr"
    code, captured = run(capsys, monkeypatch, tmp_path, "rollout", f"checkpoint={root / 'wm'}",
                         f"policy_dir={policies['fits']}", f"store={store}", f"out={out}", "episodes=1",
                         "max_steps=2")
    assert code == 0, captured.err
    assert "1 synthetic episodes written" in captured.out
    with EpisodeStore.open(out, mode="r") as written:
        assert written.num_episodes == 1 and set(written.meta["source"]) == {"synthetic"}


def test_rollout_over_ray_workers_writes_every_seed_once(setup, capsys, monkeypatch, tmp_path):
    ray = pytest.importorskip("ray")  # the fleet extra; `make test` installs it
    root, store, policies = setup
    out = tmp_path / "synthetic.zarr"
    try:
        code, captured = run(capsys, monkeypatch, tmp_path, "rollout", f"checkpoint={root / 'wm'}",
                             f"policy_dir={policies['fits']}", f"store={store}", f"out={out}", "episodes=3",
                             "max_steps=2", "workers=2", "seed=5")
    finally:
        ray.shutdown()
    assert code == 0, captured.err
    assert "3 synthetic episodes written" in captured.out
    with EpisodeStore.open(out, mode="r") as written:
        assert sorted(int(s) for s in written.meta["seed"]) == [5, 6, 7]


def test_rollout_on_workers_without_ray_is_one_line_naming_the_extra(setup, capsys, monkeypatch, tmp_path):
    import sys

    root, store, policies = setup
    monkeypatch.setitem(sys.modules, "ray", None)  # as if the fleet extra were not installed
    out = tmp_path / "synthetic.zarr"
    code, captured = run(capsys, monkeypatch, tmp_path, "rollout", f"checkpoint={root / 'wm'}",
                         f"policy_dir={policies['fits']}", f"store={store}", f"out={out}", "workers=2")
    assert code == 2 and captured.err.count("\n") == 1 and not out.exists()
    assert "Ray is not installed: it comes with the 'fleet' extra" in captured.err


@pytest.mark.parametrize(("args", "message"), [
    (("fly",), "unknown wm command 'fly'; valid: train, eval, rollout"),
    (("eval", "checkpoint=nowhere"), "checkpoint nowhere is not in a wm train run dir; give store=... and held_out=..."),
    (("eval", "checkpoint=nowhere", "store=nowhere.zarr", "held_out=1"), "store 'nowhere.zarr' does not exist"),
    (("train", "world_model.head=gan"), "unknown world-model head 'gan'; valid heads: residual, diffusion"),
    (("eval", "checkpoint=nowhere", "change_floor=300"), "change_floor must be in [0, 255) pixel levels or null, got 300.0"),
    (("train", "success_model.success_frames=0"), "success_model.success_frames must be >= 1, got 0"),
    (("train", "+world_model.extra_cameras=[front]"),
     "world-model cameras must differ; got camera 'front' and extra_cameras ['front']"),
    (("rollout", "checkpoint=nowhere", "policy_dir=nowhere", "out=x.zarr", "workers=0"), "workers must be >= 1, got 0"),
    (("rollout", "checkpoint=nowhere", "policy_dir=nowhere", "out=x.zarr", "start=reset"),
     "start 'reset' is not one of store, sim"),
])
def test_bad_settings_are_one_line_and_write_no_store(args, message, capsys, monkeypatch, tmp_path):
    code, captured = run(capsys, monkeypatch, tmp_path, *args)
    assert code == 2 and message in captured.err and captured.err.count("\n") == 1
    assert not list(tmp_path.rglob("*.zarr")) and not list(tmp_path.rglob("*.safetensors"))


def _video_frames(path):
    import imageio.v3 as iio

    return iio.imread(path)


def _rollout_videos(setup, capsys, monkeypatch, tmp_path, store, episodes, max_steps):
    """`wm rollout ... videos=1` of the fitting policy from ``store``: its output and the mp4s it wrote."""
    root, _, policies = setup
    code, captured = run(capsys, monkeypatch, tmp_path, "rollout", f"checkpoint={root / 'wm'}",
                         f"policy_dir={policies['fits']}", f"store={store}", f"out={tmp_path / 's.zarr'}",
                         f"episodes={episodes}", f"max_steps={max_steps}", "videos=1",
                         f"video_dir={tmp_path / 'videos'}")
    assert code == 0, captured.err
    return captured, sorted((tmp_path / "videos").glob("*.mp4"))


def test_rollout_videos_put_the_simulator_beside_the_imagination(setup, capsys, monkeypatch, tmp_path):
    """The store's seed reproduces the start in MuJoCo, so the video is the simulator's
    run of the same policy (left) beside the imagined one (right)."""
    captured, videos = _rollout_videos(setup, capsys, monkeypatch, tmp_path, setup[1], episodes=2, max_steps=3)
    assert [v.name for v in videos] == ["rollout_000000_sim_vs_imagined.mp4"]
    frames = _video_frames(videos[0])
    assert frames.shape[1:] == (32, 64, 3) and len(frames) == 4  # start + 3 steps, two 32 px views
    # both start from the stored start frame (up to H.264 at 32 px)
    assert np.abs(frames[0, :, :32].astype(float) - frames[0, :, 32:].astype(float)).mean() < 8
    assert "video: rollout seed 0" in captured.out
    assert "sim success" in captured.out or "sim failure" in captured.out


def test_rollout_video_without_a_real_counterpart_is_the_imagination_alone(setup, capsys, monkeypatch, tmp_path):
    """Demos recorded at the narrow start spread: their seeds reset the (wide) simulator to
    another scene, so no real counterpart is claimed."""
    from robot_learn.envs.conditions import EnvConditions

    narrow = tmp_path / "narrow.zarr"
    collect_demos("bin_place", 1, narrow, cameras=("front",), image_size=32, max_steps=4, keep_failures=True,
                  progress_bar=False, conditions=EnvConditions(start_spread="narrow"))
    captured, videos = _rollout_videos(setup, capsys, monkeypatch, tmp_path, narrow, episodes=1, max_steps=2)
    assert [v.name for v in videos] == ["rollout_000000_imagined.mp4"]
    assert _video_frames(videos[0]).shape[1:] == (32, 32, 3)
    assert "no real counterpart" in captured.out


def test_wm_train_also_trains_the_success_model_it_names(tmp_path, capsys, monkeypatch):
    """A whole (tiny) `wm train`: collect, train, the success model, the fidelity report."""
    from robot_learn.world_models.success_model import load_success_model

    run_dir = tmp_path / "run"
    code, captured = run(capsys, monkeypatch, tmp_path, "train", f"data.path={tmp_path / 'wm.zarr'}",
                         "data.episodes=2", "data.held_out=1", "train.steps=2", "train.batch_size=4",
                         "+world_model.image_size=32", "world_model.space_to_depth=2", "success_model.steps=2",
                         f"run_dir={run_dir}")
    assert code == 0, captured.err
    assert f"(use it with wm rollout scorer={run_dir / 'success_model'})" in captured.out
    judge = load_success_model(run_dir / "success_model")
    assert (judge.config.camera, judge.config.image_size) == ("front", 32)


def test_wm_train_of_two_cameras_collects_both_and_reports_fidelity_per_camera(tmp_path, capsys, monkeypatch):
    from robot_learn.world_models import load_world_model

    run_dir, store = tmp_path / "run", tmp_path / "wm2.zarr"
    code, captured = run(capsys, monkeypatch, tmp_path, "train", f"data.path={store}", "data.episodes=2",
                         "data.held_out=1", "train.steps=2", "train.batch_size=4", "+world_model.image_size=32",
                         "world_model.space_to_depth=2", "+world_model.extra_cameras=[wrist]", "success_model.steps=0",
                         f"run_dir={run_dir}")
    assert code == 0, captured.err
    assert load_world_model(run_dir / "policy", task="bin_place").config.cameras == ("front", "wrist")
    with EpisodeStore.open(store, mode="r") as collected:
        assert {"images/front", "images/wrist"} <= set(collected.keys)
    assert (run_dir / "fidelity" / "fidelity.md").exists() and (run_dir / "fidelity" / "wrist" / "fidelity.md").exists()
    assert "wrist: beats copy-last at" in captured.out


def test_rollout_refuses_an_unknown_scorer_in_one_line(setup, capsys, monkeypatch, tmp_path):
    _, store, _ = setup
    code, captured = run(capsys, monkeypatch, tmp_path, "rollout", "checkpoint=nowhere", "policy_dir=nowhere",
                         f"store={store}", f"out={tmp_path / 'x.zarr'}", "scorer=no_such_dir")
    err = captured.err
    assert code == 2 and err.count("\n") == 1 and not (tmp_path / "x.zarr").exists()
    assert "scorer 'no_such_dir' is neither 'nearest' nor a success-model directory" in err


def test_default_store_names_every_camera():
    from pathlib import Path

    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    import robot_learn.cli.hydra_app  # noqa: F401  (registers the resolvers `wm train` uses)

    configs = Path(__file__).resolve().parents[2] / "configs"
    paths = {}
    for extra in ([], ["+world_model.extra_cameras=[wrist]"]):
        with initialize_config_dir(config_dir=str(configs), version_base=None):
            cfg = compose(config_name="wm_train", overrides=extra)
        paths[len(extra)] = OmegaConf.to_container(cfg.data, resolve=True)["path"]
    assert paths == {0: "data/wm/bin_place_front_64.zarr", 1: "data/wm/bin_place_front_wrist_64.zarr"}


def test_rollout_from_fresh_simulator_resets_films_the_same_reset_beside_it(setup, capsys, monkeypatch, tmp_path):
    """``start=sim``: each rollout starts from a MuJoCo reset with its seed, and its episode's first
    state is that reset's; the video's real side is the simulator from that same reset."""
    from robot_learn.envs import make_env

    root, store, policies = setup
    out = tmp_path / "s.zarr"
    code, captured = run(capsys, monkeypatch, tmp_path, "rollout", f"checkpoint={root / 'wm'}",
                         f"policy_dir={policies['fits']}", f"store={store}", f"out={out}", "episodes=2",
                         "max_steps=2", "start=sim", "seed=500", "videos=1", f"video_dir={tmp_path / 'videos'}")
    assert code == 0, captured.err
    assert [v.name for v in sorted((tmp_path / "videos").glob("*.mp4"))] == ["rollout_000500_sim_vs_imagined.mp4"]
    env = make_env("bin_place", cameras=("front",), image_size=32)
    try:
        with EpisodeStore.open(out, mode="r") as written:
            assert list(written.meta["seed"]) == [500, 501]
            for i, seed in enumerate((500, 501)):
                first = written.episode_starts[i]
                reset = env.reset(seed=seed)[0]
                np.testing.assert_array_equal(written.array("images/front")[first], reset["images"]["front"])
                np.testing.assert_allclose(written.array("state")[first], reset["state"], atol=1e-6)
    finally:
        env.close()
    frames = _video_frames(tmp_path / "videos" / "rollout_000500_sim_vs_imagined.mp4")
    assert np.abs(frames[0, :, :32].astype(float) - frames[0, :, 32:].astype(float)).mean() < 8
