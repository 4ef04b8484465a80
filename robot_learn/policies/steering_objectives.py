"""What an operator asks of a policy's next actions, as a differentiable cost (ITPS's
alignment distances, Wang et al. 2024).

Each objective reads the positions of an unnormalised action chunk ``[B, H, A]``: the
action dims ``position_dims`` (x, y, z of a pose action), from chunk step ``start`` on
(``obs_horizon - 1``: the step the robot is at when the chunk is planned). Costs are in
the actions' own units (metres for pose actions), one per batch element:

- :class:`PointObjective`: mean over steps of |p_t - z| (go to the point z);
- :class:`SketchObjective`: sum over steps of |p_t - z_t| with the sketched path resampled,
  evenly along its length, to the chunk's steps (follow the path);
- :class:`CorrectionObjective`: sum over the corrected steps of |p_t - c_t| (continue the way
  the operator corrected the arm: a short trajectory of full actions).

``guide_chunk`` writes the operator's path into a chunk, for samplers that start from it
(ITPS's biased initialisation). The objectives know tensors only; which dims are
positions, and whether a point is reachable, is for the caller (the robot) to say.
"""

from __future__ import annotations

from typing import Sequence

import torch

_EPS = 1e-12  # keeps |d| differentiable at d = 0


def _distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return ((a - b).pow(2).sum(-1) + _EPS).sqrt()


class PathObjective:
    """Shared part of the objectives: which dims are positions and where the plan starts."""

    kind = ""

    def __init__(self, action_dim: int, position_dims: Sequence[int] = (0, 1, 2), start: int = 0) -> None:
        self.action_dim, self.position_dims, self.start = int(action_dim), tuple(int(d) for d in position_dims), int(start)
        if len(self.position_dims) != 3 or not all(0 <= d < self.action_dim for d in self.position_dims):
            raise ValueError(f"position_dims must be 3 distinct action dims below action_dim {self.action_dim}, "
                             f"got {list(self.position_dims)}")
        if self.start < 0:
            raise ValueError(f"start must be >= 0, got {self.start}")

    def check_horizon(self, horizon: int) -> None:
        """ValueError unless a chunk of ``horizon`` steps has steps from ``start`` on."""
        if self.start >= horizon:
            raise ValueError(f"the objective starts at chunk step {self.start} but the chunk has {horizon} steps")

    def positions(self, chunk: torch.Tensor) -> torch.Tensor:
        """``[B, H - start, 3]``: the positions the objective compares."""
        if chunk.shape[-1] != self.action_dim:
            raise ValueError(f"the {self.kind} objective reads {self.action_dim}-dim actions, got a chunk of "
                             f"shape {tuple(chunk.shape)}")
        return chunk[:, self.start:, list(self.position_dims)]

    def target_path(self, steps: int) -> torch.Tensor:
        """``[steps, 3]``: where the objective wants the positions of the planned steps."""
        raise NotImplementedError

    def guide_chunk(self, chunk: torch.Tensor) -> torch.Tensor:
        """A copy of ``chunk`` whose planned positions follow :meth:`target_path`."""
        out = chunk.clone()
        steps = out.shape[1] - self.start
        out[:, self.start:, list(self.position_dims)] = self.target_path(steps).to(out)
        return out

    def __call__(self, chunk: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError


class PointObjective(PathObjective):
    """Go to ``point`` (x, y, z): cost = mean over the planned steps of |p_t - point|."""

    kind = "point"

    def __init__(self, point: Sequence[float], action_dim: int, position_dims: Sequence[int] = (0, 1, 2),
                 start: int = 0) -> None:
        super().__init__(action_dim, position_dims, start)
        self.point = torch.as_tensor(point, dtype=torch.float32).reshape(-1)
        if self.point.shape != (3,) or not torch.isfinite(self.point).all():
            raise ValueError(f"a steering point is 3 finite numbers (x, y, z), got {list(point)}")

    def target_path(self, steps: int) -> torch.Tensor:
        return self.point.expand(steps, 3)

    def __call__(self, chunk: torch.Tensor) -> torch.Tensor:
        positions = self.positions(chunk)
        return _distance(positions, self.point.to(positions)).mean(dim=1)


class SketchObjective(PathObjective):
    """Follow the sketched ``path`` (``[K, 3]`` points, K >= 2): cost = sum over the planned
    steps of |p_t - z_t|, the sketch resampled evenly along its length to those steps."""

    kind = "sketch"

    def __init__(self, path: Sequence[Sequence[float]], action_dim: int, position_dims: Sequence[int] = (0, 1, 2),
                 start: int = 0) -> None:
        super().__init__(action_dim, position_dims, start)
        self.path = torch.as_tensor(path, dtype=torch.float32)
        if self.path.ndim != 2 or self.path.shape[1] != 3 or len(self.path) < 2:
            raise ValueError(f"a sketch is at least 2 points of 3 numbers (x, y, z), got shape {tuple(self.path.shape)}")
        if not torch.isfinite(self.path).all():
            raise ValueError("a sketch's points must be finite numbers")

    def target_path(self, steps: int) -> torch.Tensor:
        return resample_path(self.path, steps)

    def __call__(self, chunk: torch.Tensor) -> torch.Tensor:
        positions = self.positions(chunk)
        return _distance(positions, self.target_path(positions.shape[1]).to(positions)).sum(dim=1)


class CorrectionObjective(PathObjective):
    """Continue as corrected: ``actions`` ``[k, action_dim]`` are what the operator did from the
    current step on. Cost = sum over those k steps of |p_t - c_t| (positions); ``guide_chunk``
    writes the whole corrected actions and holds the last one after them."""

    kind = "correction"

    def __init__(self, actions: Sequence[Sequence[float]], action_dim: int, position_dims: Sequence[int] = (0, 1, 2),
                 start: int = 0) -> None:
        super().__init__(action_dim, position_dims, start)
        self.actions = torch.as_tensor(actions, dtype=torch.float32)
        if self.actions.ndim != 2 or len(self.actions) < 1 or self.actions.shape[1] != self.action_dim:
            raise ValueError(f"a correction is at least 1 action of {self.action_dim} numbers (the policy's action "
                             f"width), got shape {tuple(self.actions.shape)}")
        if not torch.isfinite(self.actions).all():
            raise ValueError("a correction's actions must be finite numbers")

    def check_horizon(self, horizon: int) -> None:
        super().check_horizon(horizon)
        if len(self.actions) > horizon - self.start:
            raise ValueError(f"a correction of {len(self.actions)} steps is longer than the {horizon - self.start} "
                             f"steps a chunk plans from step {self.start} (action_horizon {horizon})")

    def target_path(self, steps: int) -> torch.Tensor:
        return self._held(steps)[:, list(self.position_dims)]

    def guide_chunk(self, chunk: torch.Tensor) -> torch.Tensor:
        out = chunk.clone()
        out[:, self.start:] = self._held(out.shape[1] - self.start).to(out)
        return out

    def __call__(self, chunk: torch.Tensor) -> torch.Tensor:
        positions = self.positions(chunk)
        self.check_horizon(chunk.shape[1])
        k = len(self.actions)
        target = self.actions[:, list(self.position_dims)].to(positions)
        return _distance(positions[:, :k], target).sum(dim=1)

    def _held(self, steps: int) -> torch.Tensor:
        """The corrected actions, the last one repeated to ``steps`` rows."""
        rest = self.actions[-1:].expand(max(steps - len(self.actions), 0), self.action_dim)
        return torch.cat([self.actions, rest])[:steps]


def resample_path(path: torch.Tensor, steps: int) -> torch.Tensor:
    """``steps`` points evenly spaced along the polyline ``path`` ``[K, D]`` (ends included);
    a path of zero length gives its first point ``steps`` times."""
    seg = (path[1:] - path[:-1]).norm(dim=-1)
    arc = torch.cat([torch.zeros(1), seg.cumsum(0)])
    if arc[-1] <= 0:
        return path[:1].expand(steps, path.shape[1]).clone()
    wanted = torch.linspace(0.0, float(arc[-1]), steps)
    index = torch.searchsorted(arc, wanted, right=True).clamp(1, len(path) - 1)
    left, right = arc[index - 1], arc[index]
    weight = ((wanted - left) / (right - left).clamp_min(1e-12)).clamp(0.0, 1.0).unsqueeze(-1)
    return path[index - 1] + weight * (path[index] - path[index - 1])
