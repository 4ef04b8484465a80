"""`LatentDynamics`: predicts the features ``horizon`` steps ahead from the current
features and the next ``horizon`` actions (ReGuide's latent dynamics, a small MLP here
where the paper uses a ViT predictor over a frozen image encoder).

Two kinds of features, one model:
- state: proprioception and privileged object state concatenated per frame
  (``feature_keys=["state", "env_state"]``, ``encoder="state"``), for state policies;
- pixels: the shared frame encoder's per-frame features (``feature_keys=["features"]``,
  ``encoder`` = that encoder's ``identity()``), read from the store's feature cache.

The MLP regresses the standardised change f_{t+k} - f_t, so an untrained head that
outputs zeros is "no change" and learning is measured against it. A checkpoint is
``config.yaml`` + ``model.safetensors`` (no pickle) and records the task and the
encoder it was trained with; :meth:`LatentDynamics.load` refuses another task or
encoder with one line naming both.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
import yaml
from safetensors.torch import load_file, save_file
from torch import nn

from robot_learn.policies.config_checks import check_at_least

CONFIG_FILE, WEIGHTS_FILE = "config.yaml", "model.safetensors"
STATE_ENCODER = "state"  # the encoder name of the low-dimensional (state) variant


@dataclass
class LatentDynamicsConfig:
    """What the model reads and predicts, and where it was trained (YAML-serialisable)."""

    task: str
    encoder: str                 # "state", or the frame encoder's identity
    feature_keys: list[str]      # store keys concatenated into one feature vector per frame
    feature_dim: int
    action_dim: int
    horizon: int = 8             # actions read and steps predicted ahead (ReGuide's frameskip)
    hidden_dims: list[int] = field(default_factory=lambda: [256, 256])

    def __post_init__(self) -> None:
        self.feature_keys = [str(k) for k in self.feature_keys]
        self.hidden_dims = [int(h) for h in self.hidden_dims]
        check_at_least(self, ("feature_dim", "action_dim", "horizon"), 1)
        if not self.feature_keys:
            raise ValueError("a latent dynamics model reads at least one feature key")


class LatentDynamics(nn.Module):
    """f_{t+k} = f_t + MLP([norm(f_t), norm(a_t..a_{t+k-1})]) (in standardised units).

    ``feature_mean/std`` and ``action_mean/std`` standardise inputs; set them with
    :meth:`set_statistics` before training (they are saved with the weights)."""

    def __init__(self, config: LatentDynamicsConfig) -> None:
        super().__init__()
        self.config = config
        width_in = config.feature_dim + config.horizon * config.action_dim
        layers: list[nn.Module] = []
        for width in config.hidden_dims:
            layers += [nn.Linear(width_in, width), nn.Mish()]
            width_in = width
        head = nn.Linear(width_in, config.feature_dim)
        nn.init.zeros_(head.weight)  # untrained == "nothing changes"
        nn.init.zeros_(head.bias)
        self.net = nn.Sequential(*layers, head)
        for name, dim in (("feature", config.feature_dim), ("action", config.action_dim)):
            self.register_buffer(f"{name}_mean", torch.zeros(dim))
            self.register_buffer(f"{name}_std", torch.ones(dim))

    def set_statistics(self, features: torch.Tensor, actions: torch.Tensor) -> None:
        """Standardise by the mean and std of training ``features`` ``[N, D]`` and ``actions`` ``[N, A]``."""
        for name, values in (("feature", features), ("action", actions)):
            getattr(self, f"{name}_mean").copy_(values.float().mean(0))
            getattr(self, f"{name}_std").copy_(values.float().std(0).clamp_min(1e-3))

    def predicted_change(self, features: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """Standardised f_{t+k} - f_t ``[B, D]`` for ``features`` ``[B, D]`` and ``actions`` ``[B, k, A]``."""
        cfg = self.config
        if features.shape[-1] != cfg.feature_dim or actions.shape[1:] != (cfg.horizon, cfg.action_dim):
            raise ValueError(f"latent dynamics reads features [B, {cfg.feature_dim}] and actions [B, {cfg.horizon}, "
                             f"{cfg.action_dim}]; got {tuple(features.shape)} and {tuple(actions.shape)}")
        f = (features - self.feature_mean) / self.feature_std
        a = ((actions - self.action_mean) / self.action_std).flatten(1)
        return self.net(torch.cat([f, a], dim=-1))

    def forward(self, features: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """Predicted features ``horizon`` steps ahead, ``[B, D]`` in the features' own units."""
        return features + self.predicted_change(features, actions) * self.feature_std

    def loss(self, features: torch.Tensor, actions: torch.Tensor, future: torch.Tensor) -> torch.Tensor:
        """Mean squared error of the standardised change."""
        target = (future - features) / self.feature_std
        return (self.predicted_change(features, actions) - target).pow(2).mean()

    # --- checkpoints ----------------------------------------------------------------
    def save(self, directory: str | Path) -> None:
        """Write ``config.yaml`` + ``model.safetensors`` (atomically replaced)."""
        write_checkpoint(directory, "latent_dynamics", asdict(self.config), self.state_dict(), WEIGHTS_FILE)

    @classmethod
    def load(cls, directory: str | Path, task: str | None = None, encoder: str | None = None) -> "LatentDynamics":
        """Load a saved model in eval mode. With ``task`` / ``encoder`` given, a model trained on
        another task or with another encoder is a ValueError naming both."""
        directory = Path(directory)
        config = LatentDynamicsConfig(**read_checkpoint_config(directory, "latent_dynamics"))
        check_trained_for("dynamics model", directory, config.task, config.encoder, task, encoder)
        model = cls(config)
        try:
            model.load_state_dict(load_file(str(directory / WEIGHTS_FILE)), strict=True)
        except (OSError, RuntimeError, ValueError) as exc:
            raise ValueError(f"{directory / WEIGHTS_FILE} is not this latent dynamics model's weights: "
                             f"{str(exc).splitlines()[0]}") from None
        return model.eval()


def write_checkpoint(directory: str | Path, kind: str, config: dict[str, Any], tensors: dict[str, torch.Tensor],
                     weights_file: str) -> None:
    """``config.yaml`` (``type: kind`` and ``config``) and the safetensors ``weights_file`` in
    ``directory``, each written to a temporary name and renamed into place."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    save_file({k: v.detach().cpu().contiguous() for k, v in tensors.items()}, str(directory / (weights_file + ".tmp")))
    document = {"type": kind, "config": config}
    (directory / (CONFIG_FILE + ".tmp")).write_text(yaml.safe_dump(document, sort_keys=False))
    os.replace(directory / (weights_file + ".tmp"), directory / weights_file)
    os.replace(directory / (CONFIG_FILE + ".tmp"), directory / CONFIG_FILE)


def read_checkpoint_config(directory: Path, kind: str) -> dict[str, Any]:
    """The ``config`` mapping of a ``config.yaml`` whose ``type`` is ``kind``; ValueError naming the file."""
    path = directory / CONFIG_FILE
    try:
        document = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read a {kind} from {str(directory)!r}: {str(exc).splitlines()[0]}") from None
    if not isinstance(document, dict) or document.get("type") != kind or not isinstance(document.get("config"), dict):
        raise ValueError(f"{path} is not a {kind} checkpoint (its type is "
                         f"{document.get('type') if isinstance(document, dict) else None!r})")
    return document["config"]


def check_trained_for(what: str, directory: Path, task: str, encoder: str, want_task: str | None,
                      want_encoder: str | None) -> None:
    """ValueError unless the ``task`` and ``encoder`` a model was trained with are the wanted ones."""
    if (want_task is not None and want_task != task) or (want_encoder is not None and want_encoder != encoder):
        raise ValueError(f"the {what} in {directory} was trained on task '{task}' with encoder '{encoder}'; "
                         f"this run needs task '{want_task or task}' with encoder '{want_encoder or encoder}'")
