"""Policy checkpoints: ``config.yaml`` + ``model.safetensors``, never pickles.

``config.yaml`` holds ``type`` (the registry name), ``format_version`` and
``config`` (the config dataclass as plain YAML). Loading builds the policy from
the config and loads the weights strictly; every failure is a ``PolicyLoadError``
that says which file and what is wrong.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
import yaml
from safetensors.torch import load_file, save_file

from robot_learn.policies.base import Policy
from robot_learn.policies.checkpoint_yaml import read_checkpoint_yaml
from robot_learn.policies.config_checks import check_model_size
from robot_learn.policies.registry import get_policy_class, policy_names

CONFIG_FILE = "config.yaml"
WEIGHTS_FILE = "model.safetensors"
FORMAT_VERSION = 1


class PolicyLoadError(ValueError):
    """A policy checkpoint is missing, corrupt, or not the policy the caller asked for."""


class IncompatiblePolicyError(PolicyLoadError):
    """A policy's action or observation shapes do not match what the caller provides."""


def resolve_policy_dir(path: str | Path) -> Path:
    """The directory holding ``config.yaml`` + weights for ``path``: a policy dir itself, a
    training run dir (its final EMA ``policy/``) or a trainer checkpoint dir (its ``ema/``).
    A path that is none of these is returned unchanged so the loader names what is
    missing; one that does not exist is a :class:`PolicyLoadError`."""
    path = Path(path)
    if not path.exists():
        raise PolicyLoadError(f"checkpoint '{path}' does not exist")
    if (path / CONFIG_FILE).is_file():
        return path
    for sub in ("ema", "policy"):  # a trainer checkpoint holds both: its EMA, as the run evaluates
        if (path / sub / CONFIG_FILE).is_file():
            return path / sub
    return path


def config_to_dict(config: Any) -> dict[str, Any]:
    """A config dataclass as plain YAML-safe data (tuples become lists)."""
    return _plain(dataclasses.asdict(config))


def config_from_dict(config_class: type, data: Mapping[str, Any]) -> Any:
    """Build ``config_class`` from a mapping; unknown fields raise ValueError naming them."""
    data = _plain(data)
    if not isinstance(data, dict):
        raise ValueError(f"{config_class.__name__} needs a mapping, got {type(data).__name__}")
    data.pop("_target_", None)  # present when the mapping comes from Hydra YAML
    fields = {f.name for f in dataclasses.fields(config_class)}
    unknown = sorted(set(data) - fields)
    if unknown:
        raise ValueError(f"unknown {config_class.__name__} fields {unknown}; valid fields: {', '.join(sorted(fields))}")
    return config_class(**data)


def save_policy(policy: Policy, directory: str | Path) -> None:
    """Write ``policy`` to ``directory`` (created if needed), replacing files atomically."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    document = {"type": policy.name, "format_version": FORMAT_VERSION, "config": config_to_dict(policy.config)}
    state = {key: value.detach().to("cpu").contiguous() for key, value in policy.state_dict().items()}
    weights_tmp = directory / (WEIGHTS_FILE + ".tmp")
    config_tmp = directory / (CONFIG_FILE + ".tmp")
    save_file(state, str(weights_tmp), metadata={"type": policy.name})
    config_tmp.write_text(yaml.safe_dump(document, sort_keys=False))
    os.replace(weights_tmp, directory / WEIGHTS_FILE)
    os.replace(config_tmp, directory / CONFIG_FILE)


def read_policy_type(directory: str | Path) -> str:
    """The ``type`` recorded in a checkpoint's config.yaml."""
    return _read_document(Path(directory))["type"]


def load_policy(
    directory: str | Path,
    expected_type: str | None = None,
    *,
    action_dim: int | None = None,
    state_dim: int | None = None,
    obs_shapes: Mapping[str, Any] | None = None,
    device: torch.device | str = "cpu",
) -> Policy:
    """Load a saved policy in eval mode.

    ``expected_type`` rejects a checkpoint of another policy type. ``action_dim``,
    ``state_dim`` (the ``state`` key) and ``obs_shapes`` are checked with
    :func:`check_compatible`. Raises :class:`PolicyLoadError` on any problem.
    """
    directory = Path(directory)
    document = _read_document(directory)
    policy_type = document["type"]
    if expected_type is not None and policy_type != expected_type:
        raise PolicyLoadError(
            f"{directory / CONFIG_FILE} holds a '{policy_type}' policy but a '{expected_type}' policy was requested"
        )
    try:
        cls = get_policy_class(policy_type)
    except ValueError as error:
        raise PolicyLoadError(f"{directory / CONFIG_FILE}: {error}") from None
    try:
        config = config_from_dict(cls.config_class, document["config"])
        check_model_size(lambda c: cls(c, stats=None), config)
        policy = cls(config, stats=None)
    except (TypeError, ValueError) as error:
        raise PolicyLoadError(f"{directory / CONFIG_FILE} has an invalid '{policy_type}' config: {error}") from error

    weights_path = directory / WEIGHTS_FILE
    if not weights_path.is_file():
        raise PolicyLoadError(f"policy checkpoint {directory} has no {WEIGHTS_FILE}")
    try:
        state = load_file(str(weights_path))
    except Exception as error:  # safetensors raises its own error types for bad headers/lengths
        raise PolicyLoadError(f"{weights_path} is corrupt or not a safetensors file: {error}") from error
    try:
        policy.load_state_dict(state, strict=True)
    except RuntimeError as error:
        raise PolicyLoadError(f"{weights_path} does not match the '{policy_type}' policy in {CONFIG_FILE}: {error}") from error

    check_compatible(policy, action_dim=action_dim, state_dim=state_dim, obs_shapes=obs_shapes)
    return policy.to(device).eval()


def check_compatible(
    policy: Policy,
    action_dim: int | None = None,
    obs_shapes: Mapping[str, Any] | None = None,
    state_dim: int | None = None,
) -> None:
    """Raise :class:`IncompatiblePolicyError` unless ``policy`` fits the caller's spaces.

    ``obs_shapes`` describes what the caller provides per step, either flat
    (``{"state": (10,), "images/front": (96, 96, 3)}``) or nested
    (``{"images": {"front": (96, 96, 3)}}``); every observation the policy needs
    must be there with the same shape. ``state_dim`` checks only the ``state`` key.
    """
    problems = []
    if action_dim is not None and int(action_dim) != policy.action_dim:
        problems.append(f"action dim: policy {policy.action_dim}, caller {int(action_dim)}")
    needed = policy.obs_shapes
    if state_dim is not None:
        have = needed.get("state")
        if have is None:
            problems.append("state dim: the policy does not use 'state'")
        elif have != (int(state_dim),):
            problems.append(f"state dim: policy {have[0]}, caller {int(state_dim)}")
    if obs_shapes is not None:
        provided = _flatten_shapes(obs_shapes)
        for key, shape in needed.items():
            if key not in provided:
                problems.append(f"observation '{key}' is needed but the caller provides only {sorted(provided)}")
            elif provided[key] != shape:
                problems.append(f"observation '{key}': policy expects {shape}, caller provides {provided[key]}")
    if problems:
        raise IncompatiblePolicyError(f"'{policy.name}' policy is incompatible: " + "; ".join(problems))


# --- internals -----------------------------------------------------------------
def _read_document(directory: Path) -> dict[str, Any]:
    if not directory.exists():
        raise PolicyLoadError(f"policy checkpoint directory {directory} does not exist")
    if not directory.is_dir():
        raise PolicyLoadError(f"policy checkpoint {directory} is not a directory")
    config_path = directory / CONFIG_FILE
    document = read_checkpoint_yaml(config_path, PolicyLoadError, kind="policy", problem=_document_problem)
    version = document.get("format_version", FORMAT_VERSION)
    if version != FORMAT_VERSION:
        raise PolicyLoadError(f"{config_path} has format_version {version}; this code reads version {FORMAT_VERSION}")
    return document


def _document_problem(document: Any) -> str | None:
    if not isinstance(document, dict) or "type" not in document or "config" not in document:
        return f"must be a mapping with 'type' and 'config'; valid types: {', '.join(policy_names())}"
    return None


def _flatten_shapes(shapes: Mapping[str, Any], prefix: str = "") -> dict[str, tuple[int, ...]]:
    flat: dict[str, tuple[int, ...]] = {}
    for key, value in shapes.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(_flatten_shapes(value, prefix=name + "/"))
        elif hasattr(value, "shape") and not isinstance(value, (int, tuple, list)):
            flat[name] = tuple(int(v) for v in value.shape)  # a gymnasium Box or an array
        elif isinstance(value, int):
            flat[name] = (int(value),)
        else:
            flat[name] = tuple(int(v) for v in value)
    return flat


def _plain(value: Any) -> Any:
    """Tuples -> lists, mappings -> dicts (recursively), so YAML and Hydra both accept it."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):  # incl. OmegaConf ListConfig
        return [_plain(v) for v in value]
    return value
