"""Policy config checks that run before anything is built: value types named by key,
and model sizes that would not fit in memory."""

import time

import pytest
import yaml

from robot_learn.policies import PolicyLoadError, diffusion_state_config, load_policy, make_policy
from robot_learn.policies.config_checks import check_model_size
from robot_learn.policies.discrete_diffusion import discrete_diffusion_image_config

TINY = dict(down_dims=[16, 32], action_horizon=8, execute_horizon=4, num_inference_steps=2)


@pytest.mark.parametrize(("changes", "message"), [
    (dict(obs_horizon="two"), "obs_horizon must be an integer, got 'two'"),
    (dict(obs_horizon=2.0), "obs_horizon must be an integer, got 2.0"),
    (dict(clip_sample="yes"), "clip_sample must be true or false, got 'yes'"),
    (dict(down_dims=[16, "x"]), r"down_dims must be a list of integers, got \[16, 'x'\]"),
    (dict(down_dims=64), "down_dims must be a list, got 64"),
    (dict(state_dims={"state": "ten"}), r"state_dims must be a mapping to integers, got \{'state': 'ten'\}"),
    (dict(denoiser=3), "denoiser must be a string, got 3"),
])
def test_a_value_of_the_wrong_type_is_named_by_key(changes, message):
    with pytest.raises(ValueError, match=message):
        diffusion_state_config(**{**TINY, **changes})


def test_the_discrete_diffusion_config_checks_types_too():
    with pytest.raises(ValueError, match="hidden_dim must be an integer, got 'wide'"):
        discrete_diffusion_image_config(hidden_dim="wide")


def test_an_int_is_a_valid_float():
    assert discrete_diffusion_image_config(mlp_ratio=4).mlp_ratio == 4


@pytest.mark.parametrize(("name", "config", "key"), [
    ("diffusion", diffusion_state_config(down_dims=[100_000, 200_000]), "down_dims=[100000, 200000]"),
    ("discrete_diffusion", discrete_diffusion_image_config(vocab=["a"], hidden_dim=65536, num_layers=64),
     "hidden_dim=65536"),
])
def test_absurd_sizes_are_refused_before_any_weight_is_allocated(name, config, key):
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=r"policy too large: .* parameters need .* GB as fp32 weights") as info:
        make_policy(name, config)
    assert f"most of it comes from {key}" in str(info.value)
    # Counted on the meta device: hundreds of GB are never touched.
    assert time.perf_counter() - t0 < 60


def test_the_size_limit_is_half_the_memory():
    config = diffusion_state_config(**TINY)
    build = lambda c: make_policy("diffusion", c)  # noqa: E731
    check_model_size(build, config, memory_bytes=10**12)
    with pytest.raises(ValueError, match=r"more than half of this machine's 0.0 GB of memory"):
        check_model_size(build, config, memory_bytes=10_000)


def test_a_saved_config_with_absurd_sizes_is_refused_naming_the_file(tmp_path):
    make_policy("diffusion", diffusion_state_config(**TINY)).save(tmp_path / "ckpt")
    path = tmp_path / "ckpt" / "config.yaml"
    document = yaml.safe_load(path.read_text())
    document["config"]["down_dims"] = [100_000, 200_000]
    path.write_text(yaml.safe_dump(document))
    with pytest.raises(PolicyLoadError, match=rf"{path} has an invalid 'diffusion' config: policy too large"):
        load_policy(tmp_path / "ckpt")


def test_a_saved_config_with_a_string_horizon_names_the_key(tmp_path):
    make_policy("diffusion", diffusion_state_config(**TINY)).save(tmp_path / "ckpt")
    path = tmp_path / "ckpt" / "config.yaml"
    path.write_text(path.read_text().replace("obs_horizon: 2", "obs_horizon: two"))
    with pytest.raises(PolicyLoadError, match="obs_horizon must be an integer, got 'two'"):
        load_policy(tmp_path / "ckpt")
