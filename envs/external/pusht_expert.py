"""A scripted PushT expert (gym-pusht ships none): greedy pushes planned by lookahead.

Each primitive pushes the T at one point of its outline, straight along the
inward normal, for a chosen depth. Before each primitive the expert tries every
candidate (contact point x depth) in a scratch copy of the simulator, starting
from the current block pose, and keeps the one that brings the T's outline
corners closest to the goal's. It then travels to the approach point (around the
T when the straight line would hit it), pushes, and backs off.

The pymunk arena is quasi-static (velocities die at once when contact ends), so
a lookahead from the pose alone predicts the real push closely.
"""

from __future__ import annotations

import math

import numpy as np

from .pusht import GOAL_POSE
from .registry import require

# The T in the block's frame (gym-pusht's add_tee, scale 30), counter-clockwise.
T_OUTLINE = np.array([(-60, 0), (60, 0), (60, 30), (15, 30), (15, 120), (-15, 120), (-15, 30), (-60, 30)], float)
AGENT_RADIUS = 15.0
GAP = 4.0  # approach point: this far outside contact
PUSH_STEP = 8.0  # target advance per step while pushing (px)
DEPTHS = (2.0, 6.0, 15.0, 30.0, 60.0)  # push depths beyond contact (px)
HOLD_STEPS = 3  # steps the final push target is held (the agent lags its target)
TRAVEL_COST = 0.05  # px of corner error one px of travel is worth
CONTACT_SPACING = 20.0  # px between candidate contact points along the outline
SAFE_RADIUS = 100.0  # travel around the T on this circle about its centre
ARENA = (20.0, 492.0)
NEAR, FAR = 3.0, 15.0  # reach tolerances: approach point, intermediate waypoints
WAIT_LIMIT = 12  # steps to wait at a waypoint
NOISE_PX = 10.0  # target noise std (px) per unit of ``noise``


def _rot(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s], [s, c]])


def outline_world(pose: np.ndarray) -> np.ndarray:
    """The T's 8 outline corners in the arena for block pose (x, y, angle)."""
    return pose[:2] + T_OUTLINE @ _rot(pose[2]).T


GOAL_CORNERS = outline_world(np.array(GOAL_POSE))


def pose_error(pose: np.ndarray) -> float:
    """Mean distance (px) from the T's corners to the goal's."""
    return float(np.linalg.norm(outline_world(pose) - GOAL_CORNERS, axis=1).mean())


def _contacts() -> list[tuple[np.ndarray, np.ndarray]]:
    """Candidate (point, outward normal) pairs along the outline, in the block frame."""
    out = []
    for a, b in zip(T_OUTLINE, np.roll(T_OUTLINE, -1, axis=0)):
        d = b - a
        length = float(np.linalg.norm(d))
        normal = np.array([d[1], -d[0]]) / length
        n = max(1, int(length // CONTACT_SPACING))
        for k in range(n):
            out.append((a + d * (k + 0.5) / n, normal))
    return out


class PushTExpert:
    """Scripted PushT pusher: ``reset(env)``, then ``act(obs, env)`` each step.

    ``noise`` adds Gaussian noise (``noise * 10`` px std) to every target.
    ``phase``: 0 travelling, 1 pushing.
    """

    def __init__(self, noise: float = 0.0, seed: int | None = None):
        if noise < 0 or not math.isfinite(noise):
            raise ValueError(f"noise must be a finite number >= 0, got {noise}")
        pusht = require("gym_pusht.envs.pusht", "gym-pusht", "pusht")
        self.shapely = require("shapely", "gym-pusht", "pusht")
        self.sim = pusht.PushTEnv(obs_type="state")  # scratch arena for the lookahead
        self.sim.reset(seed=0)
        self.noise = float(noise)
        self.rng = np.random.default_rng(seed)
        self.contacts = _contacts()
        self.queue: list[tuple[str, np.ndarray]] = []
        self.phase = 0
        self._waited = 0

    def reset(self, env) -> None:
        """Forget the current primitive."""
        self.queue = []
        self._waited = 0

    def act(self, obs, env) -> np.ndarray:
        """Next agent target (float32 [2])."""
        agent = np.asarray(obs["state"], float)
        bx, by, c, s = np.asarray(obs["env_state"], float)
        block = np.array([bx, by, math.atan2(s, c)])
        while True:
            if not self.queue:
                self.queue = self._plan(agent, block)
            kind, target = self.queue[0]
            if kind == "push":
                self.queue.pop(0)
                break
            tol = NEAR if kind == "approach" else FAR
            if np.linalg.norm(agent - target) < tol or self._waited >= WAIT_LIMIT:
                self.queue.pop(0)
                self._waited = 0
                continue
            self._waited += 1
            break
        self.phase = int(kind == "push")
        if self.noise:
            target = target + self.rng.normal(0.0, self.noise * NOISE_PX, 2)
        return np.clip(target, 0.0, 512.0).astype(np.float32)

    # ----- planning ------------------------------------------------------------------
    def _plan(self, agent: np.ndarray, block: np.ndarray) -> list[tuple[str, np.ndarray]]:
        poly = self.shapely.Polygon(outline_world(block))
        now = pose_error(block)
        best, best_cost = None, (True, math.inf)
        rot = _rot(block[2])
        for point, normal in self.contacts:
            c, n = block[:2] + rot @ point, rot @ normal
            approach = c + n * (AGENT_RADIUS + GAP)
            if not (ARENA[0] <= approach.min() and approach.max() <= ARENA[1]):
                continue
            if poly.distance(self.shapely.Point(approach)) < AGENT_RADIUS + 0.5:
                continue  # would touch another part of the T (concave corners)
            travel = self._travel(agent, approach, poly)
            length = sum(np.linalg.norm(b - a) for a, b in zip([agent, *travel], [*travel, approach]))
            for depth in DEPTHS:
                pushes = [approach - n * min(k * PUSH_STEP, GAP + depth)
                          for k in range(1, int(math.ceil((GAP + depth) / PUSH_STEP)) + 1)]
                pushes += [pushes[-1]] * HOLD_STEPS + [approach]  # hold, then back off
                err = self._simulate(approach, block, pushes)
                # Improving pushes first; among them, error plus the travel they cost.
                cost = (err >= now, err + TRAVEL_COST * length if err < now else err)
                if cost < best_cost:
                    best, best_cost = (travel, approach, pushes), cost
        if best is None:  # nothing reachable: step back towards the centre
            return [("push", np.full(2, 256.0))]
        travel, approach, pushes = best
        return [*[("travel", p) for p in travel], ("approach", approach), *[("push", p) for p in pushes]]

    def _simulate(self, approach: np.ndarray, block: np.ndarray, targets: list[np.ndarray]) -> float:
        """Corner error after running ``targets`` from the approach point in the scratch arena."""
        sim = self.sim
        sim._set_state(np.array([*approach, *block]))
        sim.agent.velocity = (0.0, 0.0)
        for t in targets:
            sim.step(t)
        return pose_error(np.array([*sim.block.position, sim.block.angle]))

    def _travel(self, agent: np.ndarray, approach: np.ndarray, poly) -> list[np.ndarray]:
        """Waypoints before the approach point: none if the way is clear, else around the T."""
        path = self.shapely.LineString([agent, approach])
        if path.distance(poly) > AGENT_RADIUS + 1.0:
            return []
        centre = np.asarray(poly.centroid.coords[0])
        a0 = math.atan2(*(agent - centre)[::-1])
        a1 = math.atan2(*(approach - centre)[::-1])
        turn = (a1 - a0 + math.pi) % (2 * math.pi) - math.pi
        steps = max(1, int(abs(turn) // (math.pi / 4)) + 1)
        angles = [a0 + turn * k / steps for k in range(steps + 1)]
        return [np.clip(centre + SAFE_RADIUS * np.array([math.cos(a), math.sin(a)]), *ARENA) for a in angles]
