"""Loading a world-model checkpoint: every bad file is a one-line WorldModelLoadError."""

import pytest
import torch
import yaml

from robot_learn.world_models import VideoWorldModel, WorldModelConfig, WorldModelLoadError, load_world_model


@pytest.fixture
def saved(tmp_path):
    config = WorldModelConfig(image_size=32, space_to_depth=2, block_out_channels=(16, 32), state_hidden=32)
    torch.manual_seed(0)
    model = VideoWorldModel(config)
    model.save(tmp_path / "wm")
    return model, tmp_path / "wm"


def load_error(directory) -> str:
    with pytest.raises(WorldModelLoadError) as caught:
        load_world_model(directory)
    return str(caught.value)


def test_saved_model_loads_with_equal_weights(saved):
    model, directory = saved
    loaded = load_world_model(directory)
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), loaded.state_dict().values()))


def test_missing_directory(tmp_path):
    assert load_error(tmp_path / "nope") == f"world model checkpoint '{tmp_path / 'nope'}' does not exist"


def test_directory_without_config(tmp_path):
    (tmp_path / "empty").mkdir()
    assert load_error(tmp_path / "empty") == f"world model checkpoint {tmp_path / 'empty'} has no config.yaml"


def test_unparseable_config(saved):
    _, directory = saved
    (directory / "config.yaml").write_text("type: [unclosed\n")
    assert load_error(directory).startswith(f"{directory / 'config.yaml'} is not valid YAML: ")


@pytest.mark.parametrize("document, kind", [(["video_world_model"], "None"), ("just text", "None"),
                                            ({"type": "diffusion", "config": {}}, "diffusion")])
def test_config_of_another_shape_or_type(saved, document, kind):
    _, directory = saved
    (directory / "config.yaml").write_text(yaml.safe_dump(document))
    assert load_error(directory) == (f"{directory / 'config.yaml'} holds a '{kind}' checkpoint, "
                                     f"not a '{VideoWorldModel.name}'")
