"""The learned success and progress model on a real (tiny) zarr store of MuJoCo bin_place demos:
it learns, saves and loads exactly, refuses bad input in one line, and plugs into
WorldModelEnv in place of the nearest-frame scorer (`wm rollout scorer=`: tests/cli/test_wm_cli.py)."""

import numpy as np
import pytest
import torch

from robot_learn.data import EpisodeStore
from robot_learn.envs.demos import collect_demos
from robot_learn.world_models import VideoWorldModel, WorldModelConfig
from robot_learn.world_models.rollout import make_scorer, rollout_env
from robot_learn.world_models.success_model import (SuccessModel, load_success_model, success_labels,
                                                    train_success_model)

SIZE = 32


@pytest.fixture(scope="module")
def store_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("success") / "bin_place_front_32.zarr"
    collect_demos("bin_place", 4, path, cameras=("front",), image_size=SIZE, progress_bar=False)
    return path


@pytest.fixture(scope="module")
def trained(store_path, tmp_path_factory):
    torch.set_num_threads(1)
    with EpisodeStore.open(store_path, mode="r") as store:
        model = train_success_model(store.view(), "front", steps=150, batch_size=32, lr=3e-3,
                                    channels=[8, 16], hidden=64)
        data = success_labels(store.view(), "front")
    directory = tmp_path_factory.mktemp("success_model")
    model.save(directory)
    return model, data, directory


def predictions(model, data):
    with torch.inference_mode():
        logits, progress = model(torch.as_tensor(data.frames), torch.as_tensor(data.states), data.instructions)
    return torch.sigmoid(logits).numpy(), progress.numpy()


def test_it_learns_progress_and_where_success_is(trained):
    """Measured at 150 steps: progress error 0.106 per frame against the constant predictor's
    0.220, success probability 0.94 on the success frames against 0.07 on the others (after
    1 step: 0.232 and 0.51 against 0.53, so both assertions fail untrained)."""
    model, data, _ = trained
    probability, progress = predictions(model, data)
    constant = np.abs(data.progress - data.progress.mean()).mean()
    assert np.abs(progress - data.progress).mean() < 0.6 * constant
    assert probability[data.success].mean() > probability[~data.success].mean() + 0.3


def test_save_and_load_score_the_same(trained):
    model, data, directory = trained
    loaded = load_success_model(directory)
    for i in (0, int(np.flatnonzero(data.success)[0])):
        assert loaded.score(data.frames[i], data.states[i], data.instructions[i]) == \
            model.score(data.frames[i], data.states[i], data.instructions[i])


def test_a_corrupt_or_foreign_checkpoint_is_one_line_naming_the_file(trained, tmp_path):
    _, _, directory = trained
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.yaml").write_text((directory / "config.yaml").read_text())
    (broken / "model.safetensors").write_bytes(b"not safetensors")
    with pytest.raises(ValueError, match="model.safetensors is missing, corrupt"):
        load_success_model(broken)
    VideoWorldModel(WorldModelConfig(image_size=SIZE, space_to_depth=2, block_out_channels=(16, 32),
                                     state_hidden=32)).save(tmp_path / "wm")
    with pytest.raises(ValueError, match="holds a 'video_world_model' checkpoint, not a 'success_model'"):
        load_success_model(tmp_path / "wm")


def test_a_store_without_the_camera_or_without_a_success_is_refused(store_path, tmp_path):
    with EpisodeStore.open(store_path, mode="r") as store:
        with pytest.raises(ValueError, match="has no 'images/wrist'"):
            train_success_model(store.view(), "wrist", steps=1)
    failures = tmp_path / "failures.zarr"
    collect_demos("bin_place", 1, failures, cameras=("front",), image_size=SIZE, max_steps=5, keep_failures=True,
                  progress_bar=False)
    with EpisodeStore.open(failures, mode="r") as store:
        with pytest.raises(ValueError, match="has no successful episode"):
            train_success_model(store.view(), "front", steps=1)


def test_it_labels_imagined_steps_in_the_world_model_env(trained, store_path, tmp_path):
    model, _, directory = trained
    torch.manual_seed(0)
    world = VideoWorldModel(WorldModelConfig(image_size=SIZE, space_to_depth=2, block_out_channels=(16, 32),
                                             state_hidden=32))
    with rollout_env(world, store_path, max_steps=2, scorer=str(directory)) as env:
        assert isinstance(env.scorer, SuccessModel)
        obs, info = env.reset(seed=0)
        frame, state = obs["images"]["front"], obs["state"]
        assert info["progress"] == pytest.approx(model.score(frame, state, obs["instruction"])[1])
        obs, _, _, _, info = env.step(env.action_space.sample())
        assert 0.0 <= info["progress"] <= 1.0
    other = VideoWorldModel(WorldModelConfig(image_size=16, space_to_depth=2, block_out_channels=(16, 32),
                                             state_hidden=32))
    with EpisodeStore.open(store_path, mode="r") as store:
        with pytest.raises(ValueError, match="judges 'front' frames at 32 px; the world model imagines 'front' at 16"):
            make_scorer(str(directory), store.view(), other)



def test_replays_in_a_world_model_carry_the_stored_labels_and_train_a_judge(store_path):
    """Each episode replayed open loop from its first `history` frames: one imagined frame per later
    stored step, labelled as that step; a judge trains on them beside the real frames."""
    from robot_learn.world_models.replay_labels import imagined_labels

    torch.manual_seed(0)
    wm = VideoWorldModel(WorldModelConfig(image_size=SIZE, block_out_channels=(8, 16), state_hidden=16)).eval()
    with EpisodeStore.open(store_path, mode="r") as store:
        view = store.view()
        real = success_labels(view, "front")
        replays = imagined_labels(wm, view, batch=3)
        k = wm.config.history
        lengths = np.bincount(real.episode)
        assert len(replays.success) == int((lengths - k).sum())
        later = np.concatenate([np.flatnonzero(real.episode == e)[k:] for e in range(len(lengths))])
        assert np.array_equal(replays.progress, real.progress[later]) and np.array_equal(replays.success, real.success[later])
        assert replays.success.sum() == real.success.sum()  # the last frame of every successful episode
        assert success_labels(view, "front", last=3).success.sum() == 3 * real.success.sum()
        assert imagined_labels(wm, view, batch=4, last=3).success.sum() == 3 * real.success.sum()
        assert replays.frames.shape[1:] == (SIZE, SIZE, 3) and not np.array_equal(replays.frames, real.frames[later])
        judge = train_success_model(view, "front", steps=2, batch_size=8, channels=[8], hidden=16, extra=replays)
    assert judge.config.image_size == SIZE
