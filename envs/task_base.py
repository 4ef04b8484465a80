"""What a task family defines on top of the shared tabletop env.

A family (stack, peg, bin) has a forward (hard) and a reverse (easy) variant on
one scene.  ``FamilyTask`` holds the logic both variants share: the layout
sampling, the expert's goal for the carried object, the success test, and the
state-derived progress and phase.  Subclasses fill in the geometry.

The env passes itself in as ``env`` (a ``TabletopEnv``); the task only reads
poses and contact flags from it, so a task holds no physics state of its own.
Everything random about an episode lives in the ``params`` vector below, which
is part of ``get_state()``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from .scene import COLOUR_NAMES, FAMILY_OBJECTS
from .start_spread import NOMINAL_SEED, WIDE, StartSpread, start_spread

if TYPE_CHECKING:  # pragma: no cover
    from .base_env import TabletopEnv

# Expert phase ids, shared by experts (expert.phase) and info["phase"].
PHASES = ("approach", "descend", "grasp", "lift", "carry", "lower", "release", "retreat", "done")
APPROACH, DESCEND, GRASP, LIFT, CARRY, LOWER, RELEASE, RETREAT, DONE = range(len(PHASES))

# params layout: move (x, y, yaw), target (x, y, yaw), distractor (x, y, yaw),
# spot (x, y, yaw).  The spot is where reverse variants put the object down:
# a white square at ``spot_distance`` along the target's local x axis, so it is
# visible in images and a state-only policy can compute it from the target's
# pose in env_state.
N_PARAMS = 12

# Object centres are sampled on a ring sector in front of the arm that the
# top-down IK reaches even at carry height.
RADIUS_RANGE = (0.135, 0.235)
ANGLE_RANGE = (-0.9, 0.9)
YAW_RANGE = (-math.pi, math.pi)
CLEARANCE = 0.025  # gap between footprints, room for the open fingers
STILL_SPEED = 0.05  # m/s: an object slower than this counts as resting
SPOT_TOLERANCE = 0.025  # object centre within this of the spot centre
# Where a reverse variant's white square (the drop spot) lies: ``beside`` the target (the
# default, at ``spot_distance`` along its heading, so a state-only policy can compute it),
# or ``anywhere`` on the reachable ring, drawn as a forward variant draws the object to
# move. Time-reversed, ``anywhere`` episodes start where the forward variant's resets do
# (the rev2fwd recipe: the easy task puts the object down at a random pose). Dropping
# ``anywhere``, the task is done with the object put down anywhere on the table clear of
# the target: the square is only where the expert aims.
DROP_SPOTS = ("beside", "anywhere")
DEFAULT_DROP_SPOT = "beside"


class _Crowded(Exception):
    """No free spot left for the next object in this layout draw."""


def _around(centre: float, half: float | None, full: tuple[float, float] | None) -> tuple[float, float]:
    """``centre +- half`` inside ``full`` (None: unbounded); ``full`` itself when ``half`` is None."""
    if half is None:
        return full
    low, high = centre - half, centre + half
    return (low, high) if full is None else (max(full[0], low), min(full[1], high))


def yaw_of_quat(q: np.ndarray) -> float | np.ndarray:
    """Heading (rotation about world z) of a (w, x, y, z) quaternion, or of each row of ``[..., 4]``."""
    w, x, y, z = np.moveaxis(np.asarray(q, dtype=np.float64), -1, 0)
    return np.arctan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


def quat_of_yaw(yaw: float) -> np.ndarray:
    return np.array([math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)])


def nearest_symmetric_yaw(yaw: float, reference: float, period: float = math.pi / 2) -> float:
    """The angle equal to ``yaw`` modulo ``period`` that is closest to ``reference``."""
    return reference + ((yaw - reference + period / 2) % period - period / 2)


class FamilyTask:
    """Shared logic of one task family; ``forward`` picks the variant."""

    family: str = ""
    templates_forward: tuple[str, ...] = ()
    templates_reverse: tuple[str, ...] = ()
    carry_z: float = 0.11  # grasp-centre height while carrying
    goal_tolerance: float = 0.02  # horizontal, for the "placed" phase test
    spot_distance: float = 0.1  # target centre to spot centre
    # Roles the task may move: a two-mode task (``task_bin.BinEitherTask``) lets either of two
    # identical objects go into the target (both wear one colour, by ``fixed_colours``).
    movable_roles: tuple[str, ...] = ("move",)
    # Colours every episode of the task wears (role -> colour name), in place of the random draw.
    fixed_colours: dict[str, str] | None = None

    def __init__(self, forward: bool):
        self.forward = forward
        self.move_kind, self.target_kind, self.distractor_kind = FAMILY_OBJECTS[self.family]
        self._nominal: np.ndarray | None = None  # nominal_params(), drawn when first needed

    # ----- episode randomisation -------------------------------------------------
    @property
    def templates(self) -> tuple[str, ...]:
        return self.templates_forward if self.forward else self.templates_reverse

    def instruction(self, template_index: int, colours: dict[str, str]) -> str:
        t = self.templates[template_index % len(self.templates)]
        return t.format(move=colours["move"], target=colours["target"])

    def sample_params(self, rng: np.random.Generator, spread: str | StartSpread = WIDE,
                      drop_spot: str = DEFAULT_DROP_SPOT) -> np.ndarray:
        """Sample target, spot, object and distractor poses without overlaps, as widely
        as ``spread`` says (:mod:`.start_spread`; the default, ``wide``, is the whole ring),
        the spot where ``drop_spot`` says (``DROP_SPOTS``; ``anywhere``: reverse variants only)."""
        spread = start_spread(spread)
        self.check_drop_spot(drop_spot)
        nominal = None if spread.is_wide else self.nominal_params()
        for _ in range(200):  # a crowded draw starts over
            try:
                return self._sample_layout(rng, spread, nominal, drop_spot == "anywhere")
            except _Crowded:
                continue
        raise RuntimeError("could not place the objects without overlap")  # pragma: no cover

    def check_drop_spot(self, drop_spot: str) -> None:
        """ValueError unless ``drop_spot`` is one of ``DROP_SPOTS`` and fits this variant."""
        if drop_spot not in DROP_SPOTS:
            raise ValueError(f"unknown drop_spot {drop_spot!r}; valid: {', '.join(DROP_SPOTS)}")
        if drop_spot != DEFAULT_DROP_SPOT and self.forward:
            raise ValueError(f"drop_spot {drop_spot!r} is for reverse tasks (the spot is where they put the "
                             f"object down); a {self.family} forward task's goal is its target")

    def nominal_params(self) -> np.ndarray:
        """The layout that narrow spreads jitter around: the wide draw of ``NOMINAL_SEED``."""
        if self._nominal is None:
            self._nominal = self.sample_params(np.random.default_rng(NOMINAL_SEED))
        return self._nominal

    def _sample_layout(self, rng: np.random.Generator, spread: StartSpread,
                       nominal: np.ndarray | None, spot_anywhere: bool = False) -> np.ndarray:
        placed: list[tuple[float, float, float]] = []  # x, y, footprint

        def in_ring(x: float, y: float) -> bool:
            r, a = math.hypot(x, y), math.atan2(y, x)
            return RADIUS_RANGE[0] <= r <= RADIUS_RANGE[1] and ANGLE_RANGE[0] <= a <= ANGLE_RANGE[1]

        def ranges(slot: int) -> tuple[tuple[float, float], ...]:
            """(radius, bearing, yaw) ranges of the object whose params start at ``slot``.
            Wide: the ring's own constants, so its draws are the same numbers as ever."""
            if nominal is None:
                return RADIUS_RANGE, ANGLE_RANGE, YAW_RANGE
            x, y, yaw = nominal[slot : slot + 3]
            return (_around(math.hypot(x, y), spread.radius, RADIUS_RANGE),
                    _around(math.atan2(y, x), spread.bearing, ANGLE_RANGE),
                    _around(yaw, spread.yaw, None))

        def free_spot(footprint: float, slot: int) -> tuple[float, float]:
            radius, bearing, _ = ranges(slot)
            for _ in range(30):
                r, a = rng.uniform(*radius), rng.uniform(*bearing)
                x, y = r * math.cos(a), r * math.sin(a)
                if all(math.hypot(x - px, y - py) >= footprint + pf + CLEARANCE for px, py, pf in placed):
                    placed.append((x, y, footprint))
                    return x, y
            raise _Crowded

        p = np.zeros(N_PARAMS)
        p[3:5] = free_spot(self.target_kind.footprint, 3)
        if spot_anywhere:  # as a forward variant draws the object to move, at any heading
            p[5] = rng.uniform(*YAW_RANGE)
            p[9:11] = free_spot(self.move_kind.footprint, 0)
            p[11] = rng.uniform(*ranges(0)[2])
        else:
            self._spot_beside_target(p, rng, in_ring)
            placed.append((p[9], p[10], self.move_kind.footprint))
        if self.forward:
            p[0:2] = free_spot(self.move_kind.footprint, 0)
        else:
            # Start inside/on the target, slightly off-centre.
            p[0:2] = p[3:5] + rng.uniform(-0.004, 0.004, size=2)
        p[2] = rng.uniform(*ranges(0)[2])
        if self.distractor_kind is not None:
            p[6:8] = free_spot(self.distractor_kind.footprint, 6)
            p[8] = rng.uniform(*ranges(6)[2])
        return p

    def _spot_beside_target(self, p: np.ndarray, rng: np.random.Generator, in_ring: Any) -> None:
        """The target's yaw fixes the spot (next to one of its faces): draw yaws until the
        spot lies in the reachable ring. Its full range in every spread: a narrow one would
        rarely leave the spot reachable."""
        for _ in range(30):
            p[5] = rng.uniform(*YAW_RANGE)
            p[9:11] = p[3:5] + self.spot_distance * np.array([math.cos(p[5]), math.sin(p[5])])
            if in_ring(p[9], p[10]):
                p[11] = p[5]
                return
        raise _Crowded

    def swap_roles(self, params: np.ndarray, colours: dict[str, str]) -> tuple[np.ndarray, dict[str, str]]:
        """The same scene with the object to move exchanged for its look-alike.

        Stack: the two cubes trade roles (move <-> target); bin and peg: the object
        to move trades places and colours with the distractor. Each object keeps
        its pose and colour, so the images are identical and only the instruction
        (and what success means) changes. Forward variants only: in a reverse
        variant the object to move starts inside the target, so no look-alike
        stands in the same situation.
        """
        if not self.forward:
            raise ValueError("swap_roles needs a forward variant (the object to move must stand free)")
        other, start = ("target", 3) if self.distractor_kind is None else ("distractor", 6)
        swapped = params.copy()
        swapped[0:3], swapped[start : start + 3] = params[start : start + 3], params[0:3]
        colours = {**colours, "move": colours[other], other: colours["move"]}
        return swapped, colours

    def start_pose_of_move(self, params: np.ndarray) -> np.ndarray:
        """Initial (x, y, z) of the object to move (reverse variants: in the target)."""
        if self.forward:
            return np.array([params[0], params[1], self.move_kind.rest_z])
        return np.array([params[0], params[1], self.rest_z_in_target()])

    # ----- family geometry (subclasses) ------------------------------------------
    def rest_z_in_target(self) -> float:
        """Centre height of the moved object when it sits in/on the target."""
        raise NotImplementedError

    def forward_goal(self, env: "TabletopEnv") -> np.ndarray:
        """Where the expert releases the object (centre) in the forward variant."""
        raise NotImplementedError

    def in_target(self, env: "TabletopEnv") -> bool:
        """Object is where the forward variant wants it (ignoring release)."""
        raise NotImplementedError

    # ----- shared success / progress / phase -------------------------------------
    def moved_role(self, env: "TabletopEnv") -> str:
        """The role being moved, whose pose, grasp and speed success and phase read
        (``move`` unless the task has several ``movable_roles``)."""
        return "move"

    def object_slot_order(self, env: "TabletopEnv") -> list[str]:
        """Roles in the order of the ``objects`` observation's slots: by colour (palette
        order), so a role swap leaves the observation unchanged."""
        return sorted(env.layout.roles, key=lambda role: COLOUR_NAMES.index(env.colours[role]))

    def move_goal(self, env: "TabletopEnv") -> np.ndarray:
        """Object-centre position the expert releases at, for this variant."""
        if self.forward:
            return self.forward_goal(env)
        p = env.params
        return np.array([p[9], p[10], self.move_kind.rest_z + 0.003])

    def goal_yaw(self, env: "TabletopEnv") -> float:
        """Yaw the carried object should have when it is put down."""
        if self.forward:
            return yaw_of_quat(env.object_pose("target")[1])
        return float(env.params[11])

    def placement_error(self, env: "TabletopEnv") -> float:
        """Horizontal distance (m) of the object from where it should go."""
        pos, _ = env.object_pose(self.moved_role(env))
        return float(np.linalg.norm(pos[:2] - self.move_goal(env)[:2]))

    def placed(self, env: "TabletopEnv") -> bool:
        """The object sits where this variant wants it (released or not)."""
        if self.forward:
            return self.in_target(env)
        # Reverse: standing upright on the spot (or, dropping anywhere, on the table clear
        # of the target), not merely knocked off.
        pos, quat = env.object_pose(self.moved_role(env))
        upright_on_table = pos[2] < self.move_kind.rest_z + 0.005 and self.tilt(quat) < 0.3
        if env.drop_spot == DEFAULT_DROP_SPOT:
            return bool(upright_on_table and self.placement_error(env) < SPOT_TOLERANCE)
        clear = self.move_kind.footprint + self.target_kind.footprint
        return bool(upright_on_table and np.linalg.norm(pos[:2] - env.object_pose("target")[0][:2]) > clear)

    def success(self, env: "TabletopEnv") -> bool:
        return self.placed(env) and env.is_released() and env.object_speed(self.moved_role(env)) < STILL_SPEED

    def progress(self, env: "TabletopEnv", success: bool) -> float:
        """Dense staged progress: reach 0-0.3, grasp 0.4, lift/carry to 0.9, placed 0.95, done 1."""
        if success:
            return 1.0
        pos, _ = env.object_pose(self.moved_role(env))
        if env.is_held():
            lift = min(max((pos[2] - self.move_kind.rest_z) / 0.04, 0.0), 1.0)
            carry = 1.0 - min(self.placement_error(env) / 0.15, 1.0)
            return 0.4 + 0.1 * lift + 0.4 * carry
        if self.placed(env):
            return 0.95
        tcp, _ = env.tcp_pose()
        reach = float(np.linalg.norm(tcp - (pos + [0.0, 0.0, self.move_kind.grasp_dz])))
        return 0.3 * (1.0 - min(reach / 0.2, 1.0))

    def phase(self, env: "TabletopEnv", success: bool) -> int:
        """The expert's phase for the current state (defined whoever drives)."""
        tcp, _ = env.tcp_pose()
        if success:
            return RETREAT
        pos, _ = env.object_pose(self.moved_role(env))
        if env.is_held():
            if self.placement_error(env) < self.goal_tolerance:
                return LOWER if pos[2] > self.move_goal(env)[2] + 0.01 else RELEASE
            return LIFT if tcp[2] < self.carry_z - 0.02 else CARRY
        if self.placed(env):
            return RELEASE if env.gripper_command() > 0.5 else RETREAT
        grasp = pos + [0.0, 0.0, self.move_kind.grasp_dz]
        if np.linalg.norm(tcp[:2] - grasp[:2]) < 0.015:
            return GRASP if tcp[2] < grasp[2] + 0.015 else DESCEND
        return APPROACH

    # ----- helpers for subclasses ------------------------------------------------
    @staticmethod
    def in_target_frame(env: "TabletopEnv", point: np.ndarray) -> np.ndarray:
        """Point expressed in the target's horizontal frame (x, y, z)."""
        tpos, tquat = env.object_pose("target")
        yaw = yaw_of_quat(tquat)
        c, s = math.cos(yaw), math.sin(yaw)
        d = point - tpos
        return np.array([c * d[0] + s * d[1], -s * d[0] + c * d[1], d[2]])

    @staticmethod
    def tilt(quat: np.ndarray) -> float:
        """Angle (rad) between the object's z axis and the world z axis."""
        w, x, y, z = quat
        cos_t = 1.0 - 2.0 * (x * x + y * y)
        return math.acos(min(max(cos_t, -1.0), 1.0))
