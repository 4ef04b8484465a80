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
     ("grad_clip", -1.0, "grad_clip must be >= 0"), ("betas", (0.9,), "betas must be two numbers"),
     ("optimizer_impl", "adam8bit", "unknown optimizer_impl 'adam8bit'; valid: fused, foreach, for_loop")],
)
def test_bad_values_are_refused_naming_the_field(field, value, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig(**{field: value})


@pytest.mark.parametrize(("values", "message"), [
    ({"steps": "abc"}, "steps must be an integer, got 'abc'"),
    ({"lr": "fast"}, "lr must be a number, got 'fast'"),
    ({"resume": "no"}, "resume must be true or false, got 'no'"),
    ({"ema": {"decay": "high"}}, "decay must be a number, got 'high'"),
])
def test_a_value_of_the_wrong_type_is_named_by_key(values, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig(**values)


def test_a_device_this_machine_lacks_is_refused_naming_the_devices_it_has():
    import torch

    from robot_learn.training.config import check_device

    assert check_device("cpu") == "cpu" and check_device("auto") == "auto"
    with pytest.raises(ValueError, match=r"unknown device 'bogus'; valid devices: auto, cpu, cuda, cuda:N"):
        check_device("bogus")
    if torch.cuda.is_available():
        with pytest.raises(ValueError, match=r"device 'cuda:99' does not exist; valid devices here: .*cuda:0"):
            check_device("cuda:99")
    else:
        with pytest.raises(ValueError, match=r"device 'cuda' requested but CUDA is not available; valid devices "
                                             r"here: auto, cpu"):
            check_device("cuda")
