"""Policies over tensors: the ``Policy`` protocol, a registry, checkpoints and encoders.

This package knows tensors, not simulators: it imports nothing from envs,
training, evaluation or cli.
"""

from robot_learn.policies.base import Policy
from robot_learn.policies.batch import to_torch
from robot_learn.policies.checkpoint import (
    IncompatiblePolicyError,
    PolicyLoadError,
    check_compatible,
    load_policy,
    read_policy_type,
)
from robot_learn.policies.diffusion import DiffusionConfig, DiffusionPolicy, diffusion_image_config, diffusion_state_config
from robot_learn.policies.discrete_diffusion import DiscreteDiffusionConfig, DiscreteDiffusionPolicy
from robot_learn.policies.normalizer import MinMaxNormalizer
from robot_learn.policies.registry import get_policy_class, make_policy, policy_names, register_policy
from robot_learn.policies.text_encoder import PretrainedTextEncoder, TextEncoder, VocabTextEncoder, build_vocab

# Built-in policies register on import (above); computed after them.
POLICY_NAMES: tuple[str, ...] = policy_names()

__all__ = [
    "POLICY_NAMES",
    "DiffusionConfig",
    "DiffusionPolicy",
    "DiscreteDiffusionConfig",
    "DiscreteDiffusionPolicy",
    "IncompatiblePolicyError",
    "MinMaxNormalizer",
    "Policy",
    "PolicyLoadError",
    "PretrainedTextEncoder",
    "TextEncoder",
    "VocabTextEncoder",
    "build_vocab",
    "check_compatible",
    "diffusion_image_config",
    "diffusion_state_config",
    "get_policy_class",
    "load_policy",
    "make_policy",
    "policy_names",
    "read_policy_type",
    "register_policy",
    "to_torch",
]
