"""World-model checkpoints: the policies' format (``config.yaml`` + ``model.safetensors``).

Saving reuses :func:`robot_learn.policies.checkpoint.save_policy`. Loading checks
the recorded ``type`` and the task suite the model was trained on: a model of our
MuJoCo tasks is refused for a Meta-World task and the other way round, because
frames, state and actions mean different things there.
"""

from __future__ import annotations

from pathlib import Path

from safetensors.torch import load_file

from robot_learn.policies.checkpoint import (CONFIG_FILE, WEIGHTS_FILE, config_from_dict, resolve_policy_dir,
                                             save_policy)
from robot_learn.policies.checkpoint_yaml import read_checkpoint_yaml
from robot_learn.world_models.configuration_world_model import WorldModelConfig
from robot_learn.world_models.modeling_world_model import VideoWorldModel


RUN_CONFIG = "wm_train.yaml"  # written into a training run dir; eval and rollout read the store from it


class WorldModelLoadError(ValueError):
    """A world-model checkpoint is missing, corrupt, or for another task suite."""


def task_suite(task: str) -> str:
    """The suite a task belongs to: ``metaworld``, ``aloha``, ``pusht`` or ``robot_learn`` (ours)."""
    if "/" in task:
        return task.split("/", 1)[0]
    return "pusht" if task == "pusht" else "robot_learn"


def run_settings(checkpoint: str | Path) -> dict:
    """The ``wm_train.yaml`` of the run a checkpoint came from ({} when there is none)."""
    import yaml

    for parent in (Path(checkpoint), *Path(checkpoint).parents[:2]):
        if (parent / RUN_CONFIG).is_file():
            return yaml.safe_load((parent / RUN_CONFIG).read_text()) or {}
    return {}


def training_store(checkpoint: str | Path) -> str | None:
    """The store the world model at ``checkpoint`` was trained on (its run's ``data.path``), or None."""
    return (run_settings(checkpoint).get("data") or {}).get("path")


def save_world_model(model: VideoWorldModel, directory: str | Path) -> None:
    """Write ``model`` to ``directory`` (created if needed), files replaced atomically."""
    save_policy(model, directory)  # type: ignore[arg-type]  # same format; it reads name, config, weights


def load_world_model(directory: str | Path, *, task: str | None = None,
                     device: str = "cpu") -> VideoWorldModel:
    """Load a saved world model in eval mode; ``directory`` may also be a training run dir.

    ``task`` (when given) must be in the suite the model was trained on, else
    :class:`WorldModelLoadError` naming both. Any unreadable file is the same error.
    """
    try:
        directory = resolve_policy_dir(directory)
    except ValueError as error:
        raise WorldModelLoadError(f"world model {error}") from None
    config_path = directory / CONFIG_FILE
    document = read_checkpoint_yaml(config_path, WorldModelLoadError, kind="world model", problem=_document_problem)
    try:
        config = config_from_dict(WorldModelConfig, document.get("config") or {})
    except (TypeError, ValueError) as error:
        raise WorldModelLoadError(f"{config_path} has an invalid world-model config: {error}") from None
    if task is not None and task_suite(task) != config.suite:
        raise WorldModelLoadError(
            f"world model {directory} was trained on suite '{config.suite}' (task '{config.task}'); "
            f"task '{task}' is in suite '{task_suite(task)}'")
    model = VideoWorldModel(config)
    try:
        model.load_state_dict(load_file(str(directory / WEIGHTS_FILE)), strict=True)
    except Exception as error:  # safetensors' own errors for bad headers; RuntimeError for shapes
        raise WorldModelLoadError(f"{directory / WEIGHTS_FILE} is missing, corrupt or does not fit "
                                  f"{CONFIG_FILE}: {error}") from None
    return model.to(device).eval()


def _document_problem(document: object) -> str | None:
    kind = document.get("type") if isinstance(document, dict) else None
    if kind != VideoWorldModel.name:
        return f"holds a '{kind}' checkpoint, not a '{VideoWorldModel.name}'"
    return None
