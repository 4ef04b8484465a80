"""A scripted PushT expert (gym-pusht ships none): greedy pushes planned by lookahead.

Each primitive pushes the T at one point of its outline, straight along the
inward normal. Before each primitive the expert plays one steady push per
candidate contact point in a scratch copy of the physics (``pusht_lookahead``)
and scores every stopping depth of it by how close it brings the T's corners to
the goal's (plus the travel it costs); a push that reaches gym-pusht's success
coverage on the way wins outright, since the episode ends there. It then
travels to the approach point (around the T when the straight line would hit
it), pushes, holds while the agent catches up with its target, and backs off.
Pushes get shorter and slower as the T nears the goal (fine alignment).
"""

from __future__ import annotations

import math

import numpy as np

from .pusht_lookahead import Coverage, ScratchArena, contacts, outline_world, pose_error, rot

AGENT_RADIUS = 15.0
GAP = 4.0  # approach point: this far outside contact
LAG = 2  # control steps the agent trails a moving target; a push stopped at step k ends near step k + LAG
HOLD_STEPS = 2  # steps the last push target is held before backing off
TRAVEL_COST = 0.05  # px of corner error one px of travel is worth
STEP_COST = 0.3  # px of corner error one push step is worth
CONTACT_SPACING = 15.0  # px between candidate contact points along the outline
SAFE_RADIUS = 100.0  # travel around the T on this circle about its centre
ARENA = (20.0, 492.0)
NEAR, FAR = 3.0, 15.0  # reach tolerances: approach point, intermediate waypoints
WAIT_LIMIT = 12  # steps to wait at a waypoint
NOISE_PX = 10.0  # target noise std (px) per unit of ``noise``
VERIFY = 6  # improving candidates (replayed exactly) to choose from
TRY = 40  # most candidates replayed, best rough cost first
MIN_GAIN = 0.05  # px of corner error a push must win to count as improving
CHECK_COVERAGE = 12.0  # corner error (px) below which a simulated pose is checked for success


def push_profile(error: float) -> tuple[float, int]:
    """(px per step, steps) of the lookahead push for a T ``error`` px from the goal: short and slow near it."""
    step = float(np.clip(error / 4.0, 2.0, 8.0))
    depth = float(np.clip(error * 2.5, 12.0, 80.0))
    return step, int(math.ceil((GAP + depth) / step))


class PushTExpert:
    """Scripted PushT pusher: ``reset(env)``, then ``act(obs, env)`` each step.

    ``noise`` adds Gaussian noise (``noise * 10`` px std) to every target.
    ``phase``: 0 travelling, 1 pushing.
    """

    def __init__(self, noise: float = 0.0, seed: int | None = None):
        if noise < 0 or not math.isfinite(noise):
            raise ValueError(f"noise must be a finite number >= 0, got {noise}")
        self.arena = ScratchArena()
        self.coverage = Coverage()
        self.shapely = self.coverage.shapely
        self.noise = float(noise)
        self.rng = np.random.default_rng(seed)
        self.contacts = contacts(CONTACT_SPACING)
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
        step, n_steps = push_profile(now)
        ramp = np.arange(1, n_steps + LAG + 1)[:, None] * step
        first = int(math.ceil((GAP + 1.0) / step))  # shorter pushes stop before touching the T
        candidates = []  # (rough error, travel + step cost, travel, approach, push targets, ends the episode)
        r = rot(block[2])
        for point, normal in self.contacts:
            c, n = block[:2] + r @ point, r @ normal
            approach = c + n * (AGENT_RADIUS + GAP)
            if not (ARENA[0] <= approach.min() and approach.max() <= ARENA[1]):
                continue
            if poly.distance(self.shapely.Point(approach)) < AGENT_RADIUS + 0.5:
                continue  # would touch another part of the T (concave corners)
            travel = self._travel(agent, approach, poly)
            length = sum(np.linalg.norm(b - a) for a, b in zip([agent, *travel], [*travel, approach]))
            targets = approach - ramp * n
            self.arena.set_state(approach, block)
            poses = self.arena.ramp(targets)
            for k in range(first, n_steps + 1):
                pose, extra = poses[k - 1], TRAVEL_COST * length + STEP_COST * k
                if pose_error(pose) < CHECK_COVERAGE and self.coverage.success(pose):
                    # the episode ends mid-push
                    candidates.append((-1000.0, extra, travel, approach, targets[:k], True))
                    break
                err = pose_error(poses[k - 1 + LAG])  # a push stopped at step k ends about LAG steps later
                if err < now:
                    candidates.append((err, extra, travel, approach, targets[:k], False))
        best, best_cost, fallback, found = None, math.inf, None, 0
        for err, extra, travel, approach, pushes, ends in sorted(candidates, key=lambda c: c[0] + c[1])[:TRY]:
            if ends:
                best = (travel, approach, [*pushes, *[pushes[-1]] * (LAG + 1)])
                break
            plan = [*pushes, *[pushes[-1]] * HOLD_STEPS, approach]  # push, hold, back off
            self.arena.set_state(approach, block)
            err = pose_error(self.arena.ramp(np.array(plan))[-1])  # replayed exactly
            if abs(err - now) > MIN_GAIN and (fallback is None or err < fallback[0]):  # it moves the T
                fallback = (err, (travel, approach, plan))
            if err < now - MIN_GAIN:
                found += 1
                if err + extra < best_cost:
                    best, best_cost = (travel, approach, plan), err + extra
                if found == VERIFY:
                    break
        best = best or (fallback and fallback[1])  # nothing improves: the least harmful push moves things on
        if best is None:  # no candidate at all: step back towards the centre
            return [("push", np.full(2, 256.0))]
        travel, approach, pushes = best
        return [*[("travel", p) for p in travel], ("approach", approach), *[("push", p) for p in pushes]]

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
