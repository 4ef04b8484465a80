"""Learned video world models: an action-conditioned next-frame model, its fidelity
report, and ``WorldModelEnv``, a gymnasium env in which policies roll out."""

from robot_learn.world_models.checkpoint import WorldModelLoadError, load_world_model, save_world_model, task_suite
from robot_learn.world_models.configuration_world_model import WorldModelConfig
from robot_learn.world_models.modeling_world_model import VideoWorldModel

__all__ = ["VideoWorldModel", "WorldModelConfig", "WorldModelLoadError", "load_world_model", "save_world_model",
           "task_suite"]
