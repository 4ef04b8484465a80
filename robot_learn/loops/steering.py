"""Steering a session's diffusion policy toward what the operator asks (ITPS).

An operator's request is a short string, as typed on the command line
(``robot-learn hitl steer=point:0.25,0.05,0.08``) or passed to
:meth:`~robot_learn.loops.session.HITLSession.steer`:

- ``point:x,y,z``: go to a point (metres, world frame);
- ``sketch:x,y,z/x,y,z/...``: follow a path of two or more points;
- ``correction:a/a/...``: continue as corrected, each ``a`` a full action in the robot's
  action layout (comma-separated numbers), the first one for the current step.

:func:`build_steering` reads the robot's action layout (which action dims are x, y, z)
and its workspace, refuses a target the arm cannot reach or a policy acting in another
action width, and returns a :class:`~robot_learn.policies.diffusion.itps.SteeredSampler`
that the :class:`~robot_learn.loops.policy_actor.PolicyActor` plans its chunks with.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from robot_learn.policies.diffusion.itps import ITPSSettings, SteeredSampler
from robot_learn.policies.steering_objectives import CorrectionObjective, PointObjective, SketchObjective

STEER_KINDS = ("point", "sketch", "correction")
STEER_FORMS = "point:x,y,z, sketch:x,y,z/x,y,z/... or correction:<action>/<action>/..."
POSITION_NAMES = ("x", "y", "z")


@dataclass(frozen=True)
class SteerRequest:
    """A parsed steering string: its kind and its rows of numbers."""

    kind: str
    rows: tuple[tuple[float, ...], ...]
    text: str


def parse_steer(text: str) -> SteerRequest:
    """``'point:0.2,0.1,0.05'`` -> ``SteerRequest('point', ((0.2, 0.1, 0.05),), ...)``; ValueError
    naming the string and the valid forms when it is malformed."""
    text = str(text).strip()
    kind, sep, body = text.partition(":")
    kind = kind.strip()
    if not sep or kind not in STEER_KINDS:
        raise ValueError(f"malformed steer '{text}': expected {STEER_FORMS} (steering kinds: {', '.join(STEER_KINDS)})")
    try:
        rows = tuple(tuple(float(v) for v in row.split(",")) for row in body.split("/"))
    except ValueError:
        raise ValueError(f"malformed steer '{text}': values must be numbers separated by commas (points by /); "
                         f"expected {STEER_FORMS}") from None
    if not all(math.isfinite(v) for row in rows for v in row):
        raise ValueError(f"malformed steer '{text}': values must be finite numbers")
    if kind in ("point", "sketch") and any(len(row) != 3 for row in rows):
        which = "each sketch point" if kind == "sketch" else "each point"
        raise ValueError(f"malformed steer '{text}': {which} is 3 numbers x,y,z; got "
                         f"{', '.join(str(len(row)) for row in rows)}")
    if kind == "point" and len(rows) != 1:
        raise ValueError(f"malformed steer '{text}': a point is one x,y,z (a path of several is sketch:...)")
    if kind == "sketch" and len(rows) < 2:
        raise ValueError(f"malformed steer '{text}': a sketch needs at least 2 points x,y,z/x,y,z")
    if kind == "correction" and len({len(row) for row in rows}) != 1:
        raise ValueError(f"malformed steer '{text}': every corrected action has the same number of values")
    return SteerRequest(kind, rows, text)


def build_steering(text: str, robot: Any, policy: Any, sampler: str = "stochastic", **settings: Any) -> SteeredSampler:
    """A steered sampler of ``policy`` (a DiffusionPolicy) for the request ``text`` on ``robot``.

    The robot says which actions are positions (``action_names`` with x, y, z) and where
    they can reach (``workspace``: ``contains(point)`` and a description); ``settings`` go to
    :class:`ITPSSettings`. ValueError, before anything runs, for a malformed string, an
    unknown sampler, a target outside the workspace, a robot whose actions name no position,
    or a policy whose action width is not the robot's."""
    request = parse_steer(text)
    settings = ITPSSettings(sampler=sampler, **settings)
    names = tuple(getattr(robot, "action_names", ()))
    robot_name = type(robot).__name__
    if not set(POSITION_NAMES) <= set(names):
        raise ValueError(f"steering needs pose actions with x, y, z; robot {robot_name}'s actions are "
                         f"{', '.join(names) or 'unnamed'}")
    workspace = getattr(robot, "workspace", None)
    if workspace is None:
        raise ValueError(f"robot {robot_name} declares no workspace, so a steering target cannot be checked")
    position_dims = tuple(names.index(n) for n in POSITION_NAMES)
    if request.kind == "correction" and len(request.rows[0]) != len(names):
        raise ValueError(f"malformed steer '{request.text}': a corrected action has {len(names)} values "
                         f"({', '.join(names)}), got {len(request.rows[0])}")
    for row in request.rows:
        point = tuple(row[d] for d in position_dims) if request.kind == "correction" else row
        if not workspace.contains(point):
            shown = ", ".join(f"{v:g}" for v in point)
            raise ValueError(f"steering point ({shown}) is outside robot {robot_name}'s workspace: {workspace}")
    common = dict(action_dim=len(names), position_dims=position_dims, start=policy.obs_horizon - 1)
    if request.kind == "point":
        objective = PointObjective(request.rows[0], **common)
    elif request.kind == "sketch":
        objective = SketchObjective(request.rows, **common)
    else:
        objective = CorrectionObjective(request.rows, **common)
    return SteeredSampler(policy, objective, settings, label=f"{request.text} ({settings.sampler})")
