"""The Hydra policy configs build valid discrete-diffusion policies."""

from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf

from hydra.utils import instantiate
from robot_learn.policies import make_policy
from robot_learn.policies.discrete_diffusion import DiscreteDiffusionConfig

CONFIGS = Path(__file__).resolve().parents[3] / "configs" / "policy"


@pytest.mark.parametrize("name", ["discrete_diffusion", "discrete_diffusion_state", "discrete_diffusion_objects",
                                  "discrete_diffusion_gpu"])
def test_policy_yaml_builds_a_policy(name):
    config = instantiate(OmegaConf.load(CONFIGS / f"{name}.yaml"))
    assert isinstance(config, DiscreteDiffusionConfig)
    assert config.num_action_tokens == 40 and config.decoding_rounds == 12
    stats = {key: {"min": np.zeros(d, np.float32), "max": np.ones(d, np.float32), "q01": np.zeros(d, np.float32),
                   "q99": np.ones(d, np.float32)} for key, d in (*config.state_dims.items(), ("action", 5))}
    policy = make_policy("discrete_diffusion", config, stats, instructions=["put the red cube on the blue cube"])
    expected = {k: (d,) for k, d in config.state_dims.items()} | {f"images/{c}": (96, 96, 3) for c in config.camera_names}
    assert policy.obs_shapes == expected
