"""The critic filter (reversed easy-task data, rev2fwd): cut and thin episodes with a learned value.

A value model ``V(o_t, a_{t:t+chunk})`` (:class:`ChunkValue`) is trained on the hard
task's own rollouts, successes and failures, on Monte Carlo returns of a sparse reward
(1 at the success step, ``gamma`` per step before it; 0 throughout a failure). Then, for
each episode to train on:

1. **cut** it at the first frame of its final run of frames valued at least
   ``done_value``: the task is done there, and what follows (a reversed easy episode's
   return to rest) teaches nothing. rev2fwd cuts at the first such frame; a value
   learned from a few dozen rollouts can overshoot for a frame or two early on (we saw
   0.99 on a first frame), so we take the run that lasts to the end, and keep
   ``after_done`` frames past it: the value reads the action chunk ahead, so the frame
   it calls done may still have the release ahead of it (cut there, the demonstration
   never lets go);
2. **drop frames that make no progress**: GAE with zero reward,
   ``delta_t = gamma V_{t+1} - V_t`` (``1 / gamma`` after a success's last frame), ``lambda`` =
   ``gae_lambda``, smoothed over ``smooth`` frames; frames under ``min_advantage`` are
   dropped (rev2fwd keeps frames over +0.02; our values are noisier, so only frames that
   clearly lose value go);
3. **smooth the decision**: a kept or dropped run shorter than ``min_run`` frames flips;
   the first and last frame are always kept;
4. the kept frames are rebuilt as an episode with absolute-pose actions
   (:func:`~robot_learn.loops.kinematic_filter.resample`).

rev2fwd smooths over 31 frames and flips runs under 30 at a faster control rate than
our 10 Hz, where a whole episode is 40-100 frames; ours are 5 and 4. Its value model is a
1-D U-Net over 2 observation steps; ours is an MLP over one step and the flattened chunk,
which the same data train in seconds on a CPU.

A trained critic is saved with the task it judges (``critic.yaml`` + ``model.safetensors``);
:func:`load_critic` refuses it for another task.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import torch
from torch import nn

from robot_learn.critics.minibatch_fit import fit_minibatches
from robot_learn.envs.reversal import GRIPPER, check_pose_actions


@dataclass
class CriticFilter:
    """Settings of the filter (``critic:`` in ``configs/loop/reversed.yaml``)."""

    gamma: float = 0.99
    gae_lambda: float = 0.95
    chunk: int = 16               # action steps the value reads (the policy's horizon)
    done_value: float = 0.99      # the episode ends at its final run of frames valued at least this ...
    after_done: int = 8           # ... this many frames later (the value reads the chunk ahead)
    min_advantage: float = -0.05  # frames whose smoothed advantage is lower are dropped
    smooth: int = 5               # frames in the advantage's moving average
    min_run: int = 4              # kept or dropped runs shorter than this flip
    obs_keys: list[str] = field(default_factory=lambda: ["state", "env_state"])
    steps: int = 2000             # the value model's training steps (Adam, batch 256)
    hidden: int = 256
    path: str = ""                # a saved critic (its dir) to use instead of training one each round

    def __post_init__(self) -> None:
        for name in ("gamma", "gae_lambda", "done_value"):
            if not 0.0 < getattr(self, name) <= 1.0:
                raise ValueError(f"critic filter {name} must be in (0, 1], got {getattr(self, name)}")
        if self.after_done < 0:
            raise ValueError(f"critic filter after_done must be >= 0, got {self.after_done}")
        for name in ("chunk", "smooth", "min_run", "steps", "hidden"):
            if getattr(self, name) < 1:
                raise ValueError(f"critic filter {name} must be >= 1, got {getattr(self, name)}")
        self.obs_keys = [str(k) for k in self.obs_keys]


class ChunkValue(nn.Module):
    """``V(o_t, a_{t:t+chunk})`` in [0, 1]: an MLP over the observation and the flattened chunk."""

    def __init__(self, in_dim: int, hidden: int = 256) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(in_dim, hidden), nn.Mish(), nn.Linear(hidden, hidden), nn.Mish(),
                                 nn.Linear(hidden, 1))
        self.register_buffer("mean", torch.zeros(in_dim))
        self.register_buffer("std", torch.ones(in_dim))

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        return self.net((x - self.mean) / self.std).squeeze(-1)

    @torch.no_grad()
    def value(self, x: np.ndarray) -> np.ndarray:
        return torch.sigmoid(self.logits(torch.as_tensor(x, dtype=torch.float32))).numpy().astype(np.float64)


@dataclass
class Critic:
    """A trained value model, the task it judges and how it reads an episode."""

    task: str
    settings: CriticFilter
    model: ChunkValue
    dims: dict[str, int]

    def features(self, steps: Mapping[str, np.ndarray], where: str = "episode") -> np.ndarray:
        """``[T, in_dim]``: each frame's observation keys and its next ``chunk`` actions
        (the last repeated past the end). ValueError naming ``where`` and the key when one is
        missing or has another width than the critic was trained on."""
        return chunk_features(steps, self.settings.obs_keys, self.settings.chunk, where, self.dims)

    def values(self, steps: Mapping[str, np.ndarray], where: str = "episode") -> np.ndarray:
        return self.model.value(self.features(steps, where))

    def save(self, path: str | Path) -> Path:
        import yaml
        from safetensors.torch import save_file

        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        save_file(self.model.state_dict(), str(path / "model.safetensors"))
        (path / "critic.yaml").write_text(yaml.safe_dump({"type": "chunk_value", "task": self.task,
                                                          "dims": self.dims, "settings": asdict(self.settings)}))
        return path


def chunk_features(steps: Mapping[str, np.ndarray], obs_keys: Sequence[str], chunk: int, where: str,
                   dims: Mapping[str, int] | None = None) -> np.ndarray:
    """See :meth:`Critic.features`."""
    columns = []
    for key in [*obs_keys, "action"]:
        if key not in steps:
            raise ValueError(f"{where} has no '{key}', which the critic reads (it reads {', '.join(obs_keys)} "
                             f"and the actions)")
        values = np.asarray(steps[key], dtype=np.float32).reshape(len(steps[key]), -1)
        if dims is not None and values.shape[1] != dims[key]:
            raise ValueError(f"{where}: '{key}' has width {values.shape[1]}; the critic was trained on "
                             f"width {dims[key]}")
        columns.append(values)
    *obs, actions = columns
    T = len(actions)
    index = np.minimum(np.arange(T)[:, None] + np.arange(chunk)[None], T - 1)
    return np.concatenate([*obs, actions[index].reshape(T, -1)], axis=1)


def mc_values(length: int, success: bool, gamma: float) -> np.ndarray:
    """Monte Carlo return of each frame: ``gamma ** (frames to the success step)`` in a
    success (1 on its last frame), 0 in a failure."""
    if not success:
        return np.zeros(length)
    return gamma ** np.arange(length - 1, -1, -1, dtype=np.float64)


def train_critic(task: str, episodes: Sequence[tuple[Mapping[str, np.ndarray], bool]], settings: CriticFilter,
                 seed: int = 0) -> Critic:
    """A :class:`Critic` of ``task`` trained on ``episodes`` (``(steps, success)`` of the
    task's own rollouts) with binary cross-entropy on their Monte Carlo returns."""
    if not episodes:
        raise ValueError(f"the critic filter needs rollouts of {task} to train its value model on; none given")
    feats = [chunk_features(s, settings.obs_keys, settings.chunk, f"rollout {i}") for i, (s, _) in enumerate(episodes)]
    dims = {k: int(np.asarray(episodes[0][0][k]).reshape(len(episodes[0][0][k]), -1).shape[1])
            for k in [*settings.obs_keys, "action"]}
    x = torch.as_tensor(np.concatenate(feats), dtype=torch.float32)
    y = torch.as_tensor(np.concatenate([mc_values(len(f), ok, settings.gamma) for f, (_, ok) in zip(feats, episodes)]),
                        dtype=torch.float32)
    torch.manual_seed(seed)
    model = ChunkValue(x.shape[1], settings.hidden)
    model.mean, model.std = x.mean(0), x.std(0).clamp_min(1e-4)

    def loss_of(idx: torch.Tensor) -> torch.Tensor:
        return nn.functional.binary_cross_entropy_with_logits(model.logits(x[idx]), y[idx])

    fit_minibatches(model.net.parameters(), loss_of, len(x), settings.steps, 256, 1e-3, seed)
    return Critic(task, settings, model.eval(), dims)


def load_critic(path: str | Path, task: str) -> Critic:
    """The critic saved at ``path``; ValueError when it is missing, malformed or judges another task."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    from robot_learn.policies.checkpoint_yaml import read_checkpoint_yaml

    path = Path(path)

    def problem(doc: Any) -> str | None:
        ok = isinstance(doc, dict) and doc.get("type") == "chunk_value" and {"task", "dims", "settings"} <= set(doc)
        return None if ok else "must be a mapping with type: chunk_value, task, dims and settings"

    doc = read_checkpoint_yaml(path / "critic.yaml", ValueError, kind="critic", problem=problem)
    if doc["task"] != task:
        raise ValueError(f"critic {path} was trained on task '{doc['task']}'; it cannot judge '{task}' episodes "
                         f"(train one on {task}'s rollouts)")
    settings = CriticFilter(**doc["settings"])
    dims = {str(k): int(v) for k, v in doc["dims"].items()}
    model = ChunkValue(sum(dims[k] for k in settings.obs_keys) + dims["action"] * settings.chunk, settings.hidden)
    try:
        model.load_state_dict(load_file(str(path / "model.safetensors")))
    except (OSError, RuntimeError, SafetensorError) as exc:
        raise ValueError(f"critic {path}: cannot load model.safetensors: {str(exc).splitlines()[0]}") from None
    return Critic(doc["task"], settings, model.eval(), dims)


def zero_reward_gae(values: np.ndarray, success: bool, gamma: float, lam: float) -> np.ndarray:
    """GAE with r = 0: ``delta_t = gamma V_{t+1} - V_t``; after a success's last frame V is
    ``1 / gamma`` (so values rising as :func:`mc_values` does have no advantage anywhere), else 0."""
    nxt = np.append(values[1:], 1.0 / gamma if success else 0.0)
    delta = gamma * nxt - values
    out, running = np.empty_like(delta), 0.0
    for t in range(len(delta) - 1, -1, -1):
        running = delta[t] + gamma * lam * running
        out[t] = running
    return out


def flip_short_runs(keep: np.ndarray, min_run: int) -> np.ndarray:
    """``keep`` with every run (of True or of False) shorter than ``min_run`` flipped,
    shortest first, until none is left; the first and last frame stay kept."""
    keep = np.asarray(keep, dtype=bool).copy()
    while True:
        edges = np.flatnonzero(np.diff(keep.astype(np.int8))) + 1
        starts, ends = np.r_[0, edges], np.r_[edges, len(keep)]
        short = [(e - s, s, e) for s, e in zip(starts, ends) if e - s < min_run and len(starts) > 1]
        if not short:
            break
        _, s, e = min(short)
        keep[s:e] = ~keep[s]
    keep[0] = keep[-1] = True
    return keep


def critic_frames(critic: Critic, steps: Mapping[str, np.ndarray], success: bool = True,
                  where: str = "episode") -> np.ndarray:
    """Indices of the frames the filter keeps (see the module docstring, steps 1-3)."""
    s = critic.settings
    values = critic.values(steps, where)
    below = np.flatnonzero(values < s.done_value)
    end = int(below[-1]) + 2 if len(below) else 1  # through the first frame of the final run valued done
    end = min(end + s.after_done, len(values))
    adv = zero_reward_gae(values[:end], success, s.gamma, s.gae_lambda)
    kernel = np.ones(min(s.smooth, end)) / min(s.smooth, end)
    smoothed = np.convolve(np.pad(adv, (len(kernel) // 2, (len(kernel) - 1) // 2), mode="edge"), kernel, "valid")
    return np.flatnonzero(flip_short_runs(smoothed >= s.min_advantage, s.min_run))


def apply_critic(critic: Critic, steps: Mapping[str, np.ndarray], success: bool = True,
                 where: str = "episode") -> dict[str, np.ndarray]:
    """The episode cut and thinned by :func:`critic_frames`, its actions rebuilt as absolute
    poses. ValueError, naming ``where`` and the action mode, unless the actions are poses."""
    from robot_learn.loops.kinematic_filter import resample

    check_pose_actions(steps, where)
    frames = critic_frames(critic, steps, success, where)
    gripper = np.asarray(steps["action"])[:, GRIPPER]
    return resample(steps, frames.astype(np.float64), gripper)

