"""PushT geometry and a scratch arena for the PushT expert's lookahead.

The scratch arena is a bare pymunk copy of gym-pusht's (same walls, agent, T,
PD gains and substeps) without coverage, observations or contact callbacks, so
one simulated control step costs a few microseconds of pymunk. The arena is
quasi-static (space damping 0: bodies stop when contact ends), so a push
simulated from the observed pose predicts the real one closely.
"""

from __future__ import annotations

import math

import numpy as np

from .pusht import GOAL_POSE, SUCCESS_COVERAGE
from .registry import require

# The T in the block's frame (gym-pusht's add_tee, scale 30), counter-clockwise.
T_OUTLINE = np.array([(-60, 0), (60, 0), (60, 30), (15, 30), (15, 120), (-15, 120), (-15, 30), (-60, 30)], float)
WALLS = (((5, 506), (5, 5)), ((5, 5), (506, 5)), ((506, 5), (506, 506)), ((5, 506), (506, 506)))


def rot(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s], [s, c]])


def outline_world(pose: np.ndarray) -> np.ndarray:
    """The T's 8 outline corners in the arena for block pose (x, y, angle)."""
    return pose[:2] + T_OUTLINE @ rot(pose[2]).T


GOAL_CORNERS = outline_world(np.array(GOAL_POSE))


def pose_error(pose: np.ndarray) -> float:
    """Mean distance (px) from the T's corners to the goal's."""
    return float(np.linalg.norm(outline_world(pose) - GOAL_CORNERS, axis=1).mean())


def contacts(spacing: float) -> list[tuple[np.ndarray, np.ndarray]]:
    """Candidate (point, outward normal) pairs about ``spacing`` px apart along the outline (block frame)."""
    out = []
    for a, b in zip(T_OUTLINE, np.roll(T_OUTLINE, -1, axis=0)):
        d = b - a
        length = float(np.linalg.norm(d))
        normal = np.array([d[1], -d[0]]) / length
        n = max(1, int(round(length / spacing)))
        out.extend((a + d * (k + 0.5) / n, normal) for k in range(n))
    return out


class Coverage:
    """gym-pusht's success measure from a pose: area of T within the goal T / goal area."""

    def __init__(self):
        self.shapely = require("shapely", "gym-pusht", "pusht")
        self.goal = self.shapely.Polygon(GOAL_CORNERS)

    def __call__(self, pose: np.ndarray) -> float:
        return self.goal.intersection(self.shapely.Polygon(outline_world(pose))).area / self.goal.area

    def success(self, pose: np.ndarray) -> bool:
        return self(pose) > SUCCESS_COVERAGE


class ScratchArena:
    """gym-pusht's physics alone: ``ramp`` plays agent targets from a set state and returns block poses."""

    def __init__(self):
        pusht = require("gym_pusht.envs.pusht", "gym-pusht", "pusht")
        pymunk = require("pymunk", "gym-pusht", "pusht")
        ref = pusht.PushTEnv(obs_type="state")  # for dt, gains and substeps only
        self.dt, self.k_p, self.k_v = ref.dt, ref.k_p, ref.k_v
        self.substeps = int(1 / (ref.dt * ref.control_hz))
        ref.close()
        self.space = pymunk.Space()
        self.space.gravity = (0, 0)
        self.space.damping = 0.0
        self.space.add(*[pusht.PushTEnv.add_segment(self.space, a, b, 2) for a, b in WALLS])
        self.agent = pusht.PushTEnv.add_circle(self.space, (256, 400), 15)
        self.block, _ = pusht.PushTEnv.add_tee(self.space, (256, 300), 0)

    def set_state(self, agent: np.ndarray, block: np.ndarray) -> None:
        self.agent.position = tuple(agent)
        self.agent.velocity = (0.0, 0.0)
        self.block.angle = float(block[2])  # angle first: pymunk turns the body about its centre of gravity
        self.block.position = tuple(block[:2])
        self.block.velocity = (0.0, 0.0)
        self.block.angular_velocity = 0.0

    def ramp(self, targets: np.ndarray) -> np.ndarray:
        """Block poses (x, y, angle) after each control step towards ``targets`` [n, 2]."""
        agent, dt, k_p, k_v = self.agent, self.dt, self.k_p, self.k_v
        out = np.empty((len(targets), 3))
        for i, (tx, ty) in enumerate(targets):
            for _ in range(self.substeps):
                (px, py), (vx, vy) = agent.position, agent.velocity
                agent.velocity = (vx + (k_p * (tx - px) - k_v * vx) * dt, vy + (k_p * (ty - py) - k_v * vy) * dt)
                self.space.step(dt)
            (x, y), a = self.block.position, self.block.angle
            out[i] = x, y, a
        return out
