"""A world model of two cameras (front + wrist stacked along the channels) on a real tiny zarr store.

One module-scoped store (3 expert episodes, front and wrist cameras at 32 px) and one tiny
model trained a few dozen steps with the policies' Trainer serve every test.
"""

import numpy as np
import pytest
import torch

from robot_learn.data import EpisodeStore
from robot_learn.envs.demos import collect_demos
from robot_learn.evaluation import evaluate
from robot_learn.world_models import VideoWorldModel, WorldModelConfig
from robot_learn.world_models.env import WorldModelEnv
from robot_learn.world_models.fidelity import measure_fidelity
from robot_learn.world_models.modeling_world_model import split_cameras, stack_cameras
from robot_learn.world_models.rollout import WorldModelEnvFactory, check_policy_fits, generate_rollouts, task_spaces
from robot_learn.world_models.training import check_store_fits, split_store
from tests.world_models.test_world_model import SIZE, tiny_pixel_policy, train_tiny, training_transitions

CAMERAS = ("front", "wrist")


def two_camera_config(**overrides):
    return WorldModelConfig(image_size=SIZE, space_to_depth=2, block_out_channels=(16, 32), state_hidden=32,
                            extra_cameras=("wrist",), **overrides)


@pytest.fixture(scope="module")
def store_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("wm2") / "bin_place_front_wrist_32.zarr"
    collect_demos("bin_place", 3, path, cameras=CAMERAS, image_size=SIZE, max_steps=25, keep_failures=True,
                  progress_bar=False)
    return path


@pytest.fixture(scope="module")
def trained(store_path, tmp_path_factory):
    return train_tiny(store_path, two_camera_config(), tmp_path_factory.mktemp("wm2_run"))


def stacked_transitions(model, store_path):
    """Every training transition: stacked frames [N, K+1, H, W, 6], states [N, K, S], actions [N, A]."""
    batch = training_transitions(model, store_path)
    frames = torch.as_tensor(stack_cameras(batch["obs"]["images"], CAMERAS))
    k = model.config.history
    return frames, torch.as_tensor(batch["obs"]["state"][:, :k]), torch.as_tensor(batch["action"][:, k - 1])


def per_camera_errors(model, store_path):
    """Mean squared pixel error per camera of the model and of copy-last, one step ahead."""
    frames, states, actions = stacked_transitions(model, store_path)
    k = model.config.history
    pred = split_cameras(model.predict_next(frames[:, :k], states, actions)["frame"], CAMERAS)
    real, last = split_cameras(frames[:, k].float(), CAMERAS), split_cameras(frames[:, k - 1].float(), CAMERAS)
    return {c: (float(((pred[c] - real[c]) ** 2).mean()), float(((last[c] - real[c]) ** 2).mean())) for c in CAMERAS}


def test_untrained_model_copies_each_cameras_last_frame_into_its_own_channels(store_path):
    """Zero-initialised output: the front channels come back as the last front frame and the
    wrist channels as the last wrist frame (the stacking order survives the U-Net's folding)."""
    torch.manual_seed(0)
    model = VideoWorldModel(two_camera_config()).eval()
    frames, states, actions = stacked_transitions(model, store_path)
    k = model.config.history
    out = model.predict_next(frames[:, :k], states, actions)["frame"]
    assert out.shape[-1] == 6
    for camera, predicted in split_cameras(out, CAMERAS).items():
        assert torch.equal(predicted.round().to(torch.uint8), split_cameras(frames[:, k - 1], CAMERAS)[camera])


def test_trained_model_beats_copy_last_on_both_cameras(trained, store_path):
    model, _ = trained
    errors = per_camera_errors(model, store_path)
    for camera, (model_mse, copy_mse) in errors.items():
        assert model_mse < 0.9 * copy_mse, f"{camera}: model {model_mse:.1f}, copy-last {copy_mse:.1f}"
    print({c: f"model {m:.1f}, copy-last {c_:.1f}" for c, (m, c_) in errors.items()})


def test_fidelity_is_scored_per_camera(trained, store_path):
    model, _ = trained
    with EpisodeStore.open(store_path, mode="r") as store:
        held_out = split_store(store, 1).held_out
        front = measure_fidelity(model, held_out, horizon=3, stride=5)
        wrist = measure_fidelity(model, held_out, horizon=3, stride=5, camera="wrist")
        assert front.model_psnr == measure_fidelity(model, held_out, horizon=3, stride=5, camera="front").model_psnr
        with pytest.raises(ValueError, match=r"camera 'side' is not imagined .* \['front', 'wrist'\]"):
            measure_fidelity(model, held_out, horizon=3, camera="side")
    assert front.copy_last_psnr != wrist.copy_last_psnr  # two different videos were scored


def test_env_gives_both_cameras_and_writes_both_into_synthetic_episodes(trained, store_path, tmp_path):
    model, _ = trained
    out = tmp_path / "synthetic.zarr"
    with EpisodeStore.open(store_path, mode="r") as store:
        env = WorldModelEnv(model, split_store(store, 1).train, *task_spaces("bin_place"), max_steps=3)
        obs, _ = env.reset(seed=0)
        assert env.observation_space.contains(obs) and set(obs["images"]) == set(CAMERAS)
        assert env.render().shape == (SIZE, SIZE, 3)
        summary = generate_rollouts(tiny_pixel_policy(CAMERAS), env, 1, out, policy_id="two")
    assert summary.written == 1
    with EpisodeStore.open(out, mode="r") as synthetic:
        assert synthetic.array("images/wrist").shape[1:] == synthetic.array("images/front").shape[1:] == (SIZE, SIZE, 3)


def test_policies_of_both_cameras_or_of_one_run_through_evaluate(trained, store_path):
    _, run = trained
    factory = WorldModelEnvFactory(str(run), str(store_path))
    for cameras in (CAMERAS, ("front",), ("wrist",)):
        result = evaluate(tiny_pixel_policy(cameras), "bin_place", episodes=1, workers=1, videos=0, max_steps=3,
                          conditions=factory)
        assert [ep.length for ep in result.episodes] == [3]


def test_a_camera_the_model_does_not_imagine_is_refused_naming_both(trained):
    model, _ = trained
    with pytest.raises(ValueError, match=r"policy reads cameras \['front', 'side'\] at 32 px; "
                                         r"the world model imagines \['front', 'wrist'\] at 32 px"):
        check_policy_fits(tiny_pixel_policy(("front", "side")), model, 5)


def test_bad_camera_settings_get_one_line_errors(tmp_path):
    with pytest.raises(ValueError, match=r"cameras must differ; got camera 'front' and extra_cameras \['front'\]"):
        WorldModelConfig(extra_cameras=("front",))
    with pytest.raises(ValueError, match=r"extra_cameras must be"):
        WorldModelConfig(extra_cameras="wrist")
    front_only = tmp_path / "front.zarr"
    collect_demos("bin_place", 1, front_only, cameras=("front",), image_size=SIZE, max_steps=3,
                  keep_failures=True, progress_bar=False)
    with EpisodeStore.open(front_only, mode="r") as store:
        with pytest.raises(ValueError, match=r"has no camera 'wrist'; its cameras: \['front'\] \(collect with "
                                             r"cameras=\[front,wrist\] image_size=32; wm train collects"):
            check_store_fits(store, two_camera_config())


def test_grpo_groups_imagine_both_cameras_and_score_the_first(trained, store_path):
    from robot_learn.loops.group_rollouts import ImaginedGroup
    from robot_learn.world_models.scorer import NearestFrameScorer

    model, _ = trained
    view = split_store(EpisodeStore.open(store_path, mode="r"), 1).train
    group = ImaginedGroup(model, view, NearestFrameScorer(view, "front"), max_steps=2, group_size=3)
    try:
        obs = group.reset(0, seed=0)
        assert {c: f.shape for c, f in obs["images"].items()} == {c: (3, SIZE, SIZE, 3) for c in CAMERAS}
        obs, info = group.step(np.zeros((3, 5), np.float32))
        assert set(obs["images"]) == set(CAMERAS) and info["success"].shape == (3,)
        assert all(p is None for p in info["problems"])
    finally:
        group.close()


def test_a_fresh_simulator_reset_starts_the_imagination_on_both_cameras(trained, store_path):
    """``start="sim"``: a reset renders the task afresh with its seed (both cameras, its state and
    instruction), repeats that frame over the history, and imagines on from it; any policy runs there
    through the evaluation code."""
    from robot_learn.envs import make_env

    model, run = trained
    real_env = make_env("bin_place", cameras=CAMERAS, image_size=SIZE)
    with EpisodeStore.open(store_path, mode="r") as store:
        env = WorldModelEnv(model, split_store(store, 1).train, *task_spaces("bin_place"), max_steps=3, start="sim")
        try:
            for seed in (7, 8):
                obs, info = env.reset(seed=seed)
                real = real_env.reset(seed=seed)[0]
                for camera in CAMERAS:
                    np.testing.assert_array_equal(obs["images"][camera], real["images"][camera])
                np.testing.assert_allclose(obs["state"], real["state"], atol=1e-6)
                assert obs["instruction"] == real["instruction"] and info["start_episode"] == -1
            assert not np.array_equal(env.reset(seed=7)[0]["images"]["front"], obs["images"]["front"])
            obs, _, _, _, info = env.step(env.action_space.sample())
            assert env.observation_space.contains(obs) and "imagination_error" not in info
        finally:
            env.close()
            real_env.close()
        with pytest.raises(ValueError, match="start 'reset' is not one of store, sim"):
            WorldModelEnv(model, split_store(store, 1).train, *task_spaces("bin_place"), start="reset")
    factory = WorldModelEnvFactory(str(run), str(store_path), start="sim")
    result = evaluate(tiny_pixel_policy(cameras=CAMERAS), "bin_place", episodes=2, workers=1, videos=0,
                      max_steps=3, conditions=factory)
    assert [ep.length for ep in result.episodes] == [3, 3] and "fresh MuJoCo resets" in factory.describe()
