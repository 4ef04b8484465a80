"""Imagined frames with real labels: stored episodes replayed open loop in a world model.

Each episode starts from its first ``history`` stored frames and states; its stored
actions are then imagined step by step on the model's own predictions, and every imagined
frame takes the label of the stored frame it stands for (its progress, and success at the
last frame of a successful episode). A judge trained on these sees what the world model
shows for actions that really failed and really succeeded, which frames of the simulator
alone cannot teach it: after about 20 imagined steps the arm, cube and bin blur, and a
judge trained on sharp frames calls the blur a success (docs/benchmarks.md, "Policy
ranking"). A replay whose frame leaves the model's range is cut there.
"""

from __future__ import annotations

import numpy as np
import torch

from robot_learn.data.views import EpisodeView
from robot_learn.world_models.imagination import Imagination
from robot_learn.world_models.modeling_world_model import VideoWorldModel
from robot_learn.world_models.success_model import SuccessLabels, success_labels


@torch.no_grad()
def imagined_labels(model: VideoWorldModel, view: EpisodeView, batch: int = 32, seed: int = 0,
                    last: int = 1) -> SuccessLabels:
    """Every episode of ``view`` replayed in ``model`` (see the module docstring): the imagined
    frames and states after the first ``history`` steps, episode by episode, with the stored
    labels (``episode`` indexes ``view``'s episodes; ``last`` as :func:`success_labels` takes it)."""
    real = success_labels(view, model.config.camera, last=last)
    k = model.config.history
    lengths = np.bincount(real.episode, minlength=len(view.episodes))
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    actions = view.read("action").astype(np.float32)
    generator = torch.Generator(device=model.device).manual_seed(seed)
    keep_rows, frames_out, states_out = [], [], []
    replayable = [i for i in range(len(lengths)) if lengths[i] > k]
    for lo in range(0, len(replayable), batch):
        eps = np.asarray(replayable[lo:lo + batch])
        first = offsets[eps]
        last_row = offsets[eps + 1] - 1
        steps = int(lengths[eps].max()) - k
        imagination = Imagination(model, np.stack([real.frames[f:f + k] for f in first]),
                                  np.stack([real.states[f:f + k] for f in first]), generator=generator)
        alive = np.ones(len(eps), dtype=bool)
        for t in range(steps):  # imagines stored frame k + t of each episode
            rows = first + k + t
            inside = (k + t) < lengths[eps]
            frame, state, problems = imagination.step(actions[np.minimum(rows - 1, last_row)])
            alive &= np.array([p is None for p in problems])
            use = alive & inside
            if not use.any():  # every replay has ended or left the model's range
                break
            keep_rows.append(rows[use])
            frames_out.append(frame.cpu().numpy()[use])
            states_out.append(state.cpu().numpy()[use])
    if not keep_rows:
        raise ValueError(f"no episode of store {view.store.path} has more than {k} steps to replay")
    rows = np.concatenate(keep_rows)
    order = np.argsort(rows, kind="stable")  # episode by episode, in time order
    rows = rows[order]
    return SuccessLabels(np.concatenate(frames_out)[order], np.concatenate(states_out)[order].astype(np.float32),
                         [real.instructions[r] for r in rows], real.progress[rows], real.success[rows],
                         real.episode[rows])
