"""Registry, save/load round trips and every way loading can fail."""

import numpy as np
import pytest
import torch
import yaml
from policy_fixtures import ACTION_DIM, STATE_DIM, tensor_batch, tiny_config

from robot_learn.policies import (
    POLICY_NAMES,
    DiffusionPolicy,
    IncompatiblePolicyError,
    PolicyLoadError,
    check_compatible,
    load_policy,
    make_policy,
)


@pytest.fixture
def saved(tmp_path, stats):
    torch.manual_seed(0)
    policy = make_policy("diffusion", tiny_config(), stats)
    policy.save(tmp_path / "ckpt")
    return policy, tmp_path / "ckpt"


def test_registry_lists_diffusion():
    assert "diffusion" in POLICY_NAMES


def test_unknown_policy_name_lists_valid_names():
    with pytest.raises(ValueError, match="unknown policy 'difusion'; valid policies: .*diffusion"):
        make_policy("difusion", tiny_config())


def test_make_policy_accepts_a_hydra_style_mapping_and_rejects_unknown_fields(stats):
    config = {"_target_": "robot_learn.policies.diffusion.DiffusionConfig", **vars(tiny_config())}
    assert isinstance(make_policy("diffusion", config, stats), DiffusionPolicy)
    with pytest.raises(ValueError, match=r"unknown DiffusionConfig fields \['down_dimz'\]"):
        make_policy("diffusion", {"down_dimz": [8]}, stats)


def test_save_writes_yaml_and_safetensors_only(saved):
    _, directory = saved
    assert sorted(p.name for p in directory.iterdir()) == ["config.yaml", "model.safetensors"]
    document = yaml.safe_load((directory / "config.yaml").read_text())
    assert document["type"] == "diffusion"
    assert document["config"]["down_dims"] == [32, 64]


def test_load_reproduces_weights_and_seeded_actions(saved, windows):
    policy, directory = saved
    loaded = load_policy(directory, expected_type="diffusion")
    assert not loaded.training
    original, restored = policy.state_dict(), loaded.state_dict()
    assert original.keys() == restored.keys()
    assert all(torch.equal(original[k], restored[k]) for k in original)
    obs = tensor_batch(windows)["obs"]
    policy.eval()
    a = policy.predict_action_chunk(obs, generator=torch.Generator().manual_seed(7))
    b = loaded.predict_action_chunk(obs, generator=torch.Generator().manual_seed(7))
    assert torch.equal(a, b)


def test_normaliser_statistics_survive_save_and_load(saved, stats):
    _, directory = saved
    loaded = load_policy(directory)
    raw = torch.from_numpy(stats["action"]["max"])[None]
    assert torch.allclose(loaded.action_normalizer.normalize(raw), torch.ones(1, ACTION_DIM))


def test_missing_directory_is_a_load_error(tmp_path):
    with pytest.raises(PolicyLoadError, match="does not exist"):
        load_policy(tmp_path / "nope")


def test_directory_without_config_is_a_load_error(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(PolicyLoadError, match="has no config.yaml"):
        load_policy(tmp_path / "empty")


def test_missing_weights_file_is_a_load_error(saved):
    _, directory = saved
    (directory / "model.safetensors").unlink()
    with pytest.raises(PolicyLoadError, match="has no model.safetensors"):
        load_policy(directory)


def test_truncated_weights_are_a_load_error(saved):
    _, directory = saved
    path = directory / "model.safetensors"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(PolicyLoadError, match="corrupt or not a safetensors file"):
        load_policy(directory)


def test_garbage_weights_are_a_load_error(saved):
    _, directory = saved
    (directory / "model.safetensors").write_bytes(np.random.default_rng(0).bytes(4096))
    with pytest.raises(PolicyLoadError, match="corrupt or not a safetensors file"):
        load_policy(directory)


def test_unparseable_config_is_a_load_error(saved):
    _, directory = saved
    (directory / "config.yaml").write_text("type: [unclosed\n")
    with pytest.raises(PolicyLoadError, match="not valid YAML"):
        load_policy(directory)


def test_checkpoint_of_another_policy_type_is_a_load_error(saved):
    _, directory = saved
    with pytest.raises(PolicyLoadError, match="holds a 'diffusion' policy but a 'discrete_diffusion' policy was requested"):
        load_policy(directory, expected_type="discrete_diffusion")


def test_unregistered_type_in_config_lists_valid_types(saved):
    _, directory = saved
    document = yaml.safe_load((directory / "config.yaml").read_text())
    document["type"] = "vla9000"
    (directory / "config.yaml").write_text(yaml.safe_dump(document))
    with pytest.raises(PolicyLoadError, match="unknown policy 'vla9000'; valid policies: .*diffusion"):
        load_policy(directory)


def test_weights_that_do_not_match_the_config_are_a_load_error(saved):
    _, directory = saved
    document = yaml.safe_load((directory / "config.yaml").read_text())
    document["config"]["down_dims"] = [16, 32]
    (directory / "config.yaml").write_text(yaml.safe_dump(document))
    with pytest.raises(PolicyLoadError, match="does not match the 'diffusion' policy"):
        load_policy(directory)


def test_invalid_config_values_are_a_load_error(saved):
    _, directory = saved
    document = yaml.safe_load((directory / "config.yaml").read_text())
    document["config"]["inference_scheduler"] = "euler"
    (directory / "config.yaml").write_text(yaml.safe_dump(document))
    with pytest.raises(PolicyLoadError, match="unknown inference_scheduler 'euler'; valid choices: ddpm, ddim, dpmsolver"):
        load_policy(directory)


def test_action_dimension_mismatch_is_a_load_error(saved):
    _, directory = saved
    with pytest.raises(IncompatiblePolicyError, match=f"action dim: policy {ACTION_DIM}, caller 5"):
        load_policy(directory, action_dim=5)
    assert issubclass(IncompatiblePolicyError, PolicyLoadError)


def test_state_dimension_mismatch_is_a_load_error(saved):
    _, directory = saved
    with pytest.raises(PolicyLoadError, match=f"state dim: policy {STATE_DIM}, caller 10"):
        load_policy(directory, action_dim=ACTION_DIM, state_dim=10)


def test_matching_dimensions_load(saved):
    _, directory = saved
    policy = load_policy(directory, action_dim=ACTION_DIM, state_dim=STATE_DIM, obs_shapes={"state": (STATE_DIM,), "env_state": 4})
    assert policy.action_dim == ACTION_DIM


def test_check_compatible_names_missing_observations_and_wrong_image_sizes(stats):
    policy = make_policy("diffusion", tiny_config(camera_names=["front"], image_size=24, crop_size=20), stats)
    with pytest.raises(IncompatiblePolicyError, match="observation 'env_state' is needed"):
        check_compatible(policy, obs_shapes={"state": (STATE_DIM,), "images": {"front": (24, 24, 3)}})
    with pytest.raises(IncompatiblePolicyError, match=r"'images/front': policy expects \(24, 24, 3\), caller provides \(96, 96, 3\)"):
        check_compatible(policy, obs_shapes={"state": (STATE_DIM,), "env_state": (4,), "images": {"front": (96, 96, 3)}})
    check_compatible(policy, ACTION_DIM, {"state": (STATE_DIM,), "env_state": (4,), "images/front": (24, 24, 3), "extra": (1,)})
