import dataclasses

import pytest
import yaml
from hydra.utils import instantiate
from omegaconf import OmegaConf

from robot_learn.policies import DiffusionConfig, diffusion_state_config
from robot_learn.policies.checkpoint import config_from_dict, config_to_dict


def test_config_round_trips_through_yaml():
    config = diffusion_state_config(down_dims=[32, 64, 128])
    text = yaml.safe_dump(config_to_dict(config))
    assert config_from_dict(DiffusionConfig, yaml.safe_load(text)) == config


def test_hydra_instantiates_the_dataclass_with_plain_containers():
    node = OmegaConf.create({"_target_": "robot_learn.policies.diffusion.DiffusionConfig", "down_dims": [32, 64], "state_dims": {"state": 10}})
    config = instantiate(node)
    assert isinstance(config, DiffusionConfig)
    assert type(config.down_dims) is list and type(config.state_dims) is dict
    assert yaml.safe_load(yaml.safe_dump(config_to_dict(config)))["down_dims"] == [32, 64]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (dict(inference_scheduler="euler"), "unknown inference_scheduler 'euler'; valid choices: ddpm, ddim, dpmsolver"),
        (dict(prediction_type="v"), "unknown prediction_type 'v'; valid choices: epsilon, sample"),
        (dict(denoiser="mlp"), "unknown denoiser 'mlp'; valid choices: unet, transformer"),
        (dict(text_encoder="clip"), "unknown text_encoder 'clip'; valid choices: none, vocab, pretrained"),
        (dict(execute_horizon=16), "obs_horizon - 1 \\+ execute_horizon must be <= action_horizon"),
        (dict(action_horizon=10), "action_horizon \\(10\\) must be divisible by 2 \\*\\* \\(len\\(down_dims\\) - 1\\) = 4"),
        (dict(num_inference_steps=200), "num_inference_steps \\(200\\) exceeds num_train_timesteps \\(100\\)"),
        (dict(text_encoder="pretrained"), "needs pretrained_text_path"),
        (dict(state_dims={}, camera_names=[]), "needs state_dims or camera_names"),
        (dict(init_noise_scale=-0.5), "init_noise_scale must be a finite number >= 0 .*got -0.5"),
        (dict(init_noise_scale=float("nan")), "init_noise_scale must be a finite number >= 0 .*got nan"),
    ],
)
def test_bad_settings_are_named_with_valid_choices(changes, message):
    with pytest.raises(ValueError, match=message):
        DiffusionConfig(**changes)


def test_defaults_follow_the_diffusion_policy_recipe():
    config = DiffusionConfig()
    assert (config.num_train_timesteps, config.beta_schedule, config.clip_sample) == (100, "squaredcos_cap_v2", True)
    assert config.down_dims == [64, 128, 256]
    assert all(f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING for f in dataclasses.fields(config))
