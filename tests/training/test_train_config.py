"""TrainConfig: validation, YAML round trip and Hydra instantiation."""

import pytest
import yaml
from hydra.utils import instantiate
from omegaconf import OmegaConf

from robot_learn.training import EMAConfig, TrainConfig


def test_defaults_follow_the_diffusion_policy_recipe():
    cfg = TrainConfig()
    assert (cfg.lr, cfg.weight_decay, cfg.grad_clip) == (1e-4, 1e-6, 1.0)
    assert cfg.betas == (0.95, 0.999)
    assert cfg.ema.enabled and cfg.ema.power == 0.75
    assert cfg.device == "auto" and cfg.wandb is False and cfg.resume is True


def test_config_round_trips_through_yaml():
    cfg = TrainConfig(steps=7, betas=(0.9, 0.99), ema=EMAConfig(power=0.5), out_dir="x")
    text = yaml.safe_dump(cfg.to_dict())
    back = TrainConfig.from_dict(yaml.safe_load(text))
    assert back == cfg


def test_hydra_instantiates_the_config_with_a_nested_ema_mapping():
    node = OmegaConf.create(
        {"_target_": "robot_learn.training.TrainConfig", "steps": 12, "betas": [0.9, 0.95],
         "ema": {"enabled": False, "min_decay": 0}}
    )
    cfg = instantiate(node, _convert_="all")
    assert isinstance(cfg, TrainConfig) and isinstance(cfg.ema, EMAConfig)
    assert cfg.steps == 12 and cfg.betas == (0.9, 0.95) and cfg.ema.enabled is False
    assert isinstance(cfg.ema.min_decay, float)  # diffusers' EMAModel rejects an int here


def test_unknown_device_is_refused_naming_the_valid_choices():
    with pytest.raises(ValueError, match=r"unknown device 'gpu'; valid devices: auto, cpu, cuda"):
        TrainConfig(device="gpu")


def test_unknown_keys_are_refused_naming_the_valid_keys():
    with pytest.raises(ValueError, match=r"unknown TrainConfig keys \['stepz'\]; valid keys: .*steps"):
        TrainConfig.from_dict({"stepz": 3})


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [("steps", 0, "steps must be >= 1"), ("lr", 0.0, "lr must be > 0"),
     ("grad_clip", -1.0, "grad_clip must be >= 0"), ("betas", (0.9,), "betas must be two numbers")],
)
def test_bad_values_are_refused_naming_the_field(field, value, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig(**{field: value})
