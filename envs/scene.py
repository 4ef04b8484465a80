"""Build the MuJoCo model of one task family: the arm scene plus its objects.

Every family has the same three roles, so env code is shared:

* ``move``: the free object the robot carries (a cube or a peg);
* ``target``: where it goes (a free cube, or a static fixture/bin on a mocap
  body so its pose can be randomised and is part of mj_getState);
* ``distractor``: an optional free object of another colour, so the
  instruction has to be read to pick the right object.

Both variants of a family (forward and reverse) use the same model, so a
state saved in one loads into the other (needed for time reversal).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np

from .arm import JOINT_NAMES

ASSET = Path(__file__).parent / "assets" / "so101_tabletop.xml"

# Named colours used in instructions; RGB in [0, 1].
PALETTE: dict[str, tuple[float, float, float]] = {
    "red": (0.85, 0.12, 0.12),
    "green": (0.15, 0.65, 0.2),
    "blue": (0.15, 0.3, 0.85),
    "yellow": (0.95, 0.85, 0.1),
    "purple": (0.55, 0.2, 0.7),
    "orange": (0.98, 0.5, 0.05),
    "cyan": (0.1, 0.8, 0.85),
    "pink": (0.98, 0.5, 0.7),
}
COLOUR_NAMES = tuple(PALETTE)

CUBE_HALF = 0.02
PEG_HALF = (0.012, 0.012, 0.035)
HOLE_HALF = 0.018  # square hole; 6 mm clearance around the peg on each side
FIXTURE_HALF = 0.045
FIXTURE_HEIGHT = 0.04
BIN_INNER_HALF = 0.055
BIN_WALL = 0.005
BIN_HEIGHT = 0.04
BIN_FLOOR = 0.006
SPOT_HALF = 0.025

# Object-object contacts: torsional friction (condim 4) keeps carried objects
# from spinning in the grasp.
_OBJECT_GEOM = dict(contype=1, conaffinity=1, condim=4, friction=[1.0, 0.02, 0.001])
_STATIC_GEOM = dict(contype=4, conaffinity=3, condim=3)


@dataclass(frozen=True)
class ObjectKind:
    """Shape facts the tasks need: resting height on the table and footprint."""

    name: str
    rest_z: float  # centre height when resting upright on the table
    footprint: float  # radius of the disc it occupies (for layout sampling)
    grasp_dz: float  # grasp-centre height above the object centre


CUBE = ObjectKind("cube", CUBE_HALF, 0.03, 0.002)
PEG = ObjectKind("peg", PEG_HALF[2], 0.018, 0.023)
FIXTURE = ObjectKind("block", 0.0, 0.064, 0.0)
BIN = ObjectKind("bin", 0.0, BIN_INNER_HALF + BIN_WALL + 0.027, 0.0)

FAMILY_OBJECTS = {
    # family: (move, target, distractor or None)
    "stack": (CUBE, CUBE, None),
    "peg": (PEG, FIXTURE, PEG),
    "bin": (CUBE, BIN, CUBE),
}


@dataclass(frozen=True)
class SceneLayout:
    """Ids into the compiled model for the arm and the three roles."""

    arm_qpos: np.ndarray  # qpos addresses of the 6 SO-101 joints
    arm_dof: np.ndarray
    tcp_site: int
    pad_geoms: np.ndarray  # left, right
    body: dict[str, int]  # role -> body id
    free_qpos: dict[str, int]  # role -> qpos address of its free joint
    free_dof: dict[str, int]
    mocap: dict[str, int]  # role -> mocap id (static targets)
    spot_mocap: int
    spot_geom: int
    role_geoms: dict[str, np.ndarray]  # role -> geoms to colour
    roles: tuple[str, ...]


def _add_free_object(spec: mujoco.MjSpec, role: str, kind: ObjectKind) -> None:
    body = spec.worldbody.add_body(name=role, pos=[0.2, 0.0, kind.rest_z])
    body.add_freejoint(name=f"{role}_free")
    size = [CUBE_HALF] * 3 if kind is CUBE else list(PEG_HALF)
    # ~650 kg/m^3 (painted wood): a 4 cm cube weighs ~42 g.
    body.add_geom(name=f"{role}_geom", type=mujoco.mjtGeom.mjGEOM_BOX, size=size, density=650, **_OBJECT_GEOM)


def _add_static_target(spec: mujoco.MjSpec, kind: ObjectKind) -> None:
    body = spec.worldbody.add_body(name="target", mocap=True, pos=[0.2, 0.0, 0.0])
    box = mujoco.mjtGeom.mjGEOM_BOX
    if kind is FIXTURE:
        # Four walls around a square hole that goes down to the table.
        wall = (FIXTURE_HALF - HOLE_HALF) / 2
        mid = HOLE_HALF + wall
        h = FIXTURE_HEIGHT / 2
        for i, (px, py, sx, sy) in enumerate(
            [(mid, 0, wall, FIXTURE_HALF), (-mid, 0, wall, FIXTURE_HALF), (0, mid, HOLE_HALF, wall), (0, -mid, HOLE_HALF, wall)]
        ):
            body.add_geom(name=f"target_wall{i}", type=box, pos=[px, py, h], size=[sx, sy, h], **_STATIC_GEOM)
    else:
        outer = BIN_INNER_HALF + BIN_WALL / 2
        h = BIN_HEIGHT / 2
        body.add_geom(name="target_floor", type=box, pos=[0, 0, BIN_FLOOR / 2],
                      size=[BIN_INNER_HALF + BIN_WALL, BIN_INNER_HALF + BIN_WALL, BIN_FLOOR / 2], **_STATIC_GEOM)
        for i, (px, py, sx, sy) in enumerate(
            [(outer, 0, BIN_WALL / 2, outer + BIN_WALL / 2), (-outer, 0, BIN_WALL / 2, outer + BIN_WALL / 2),
             (0, outer, outer - BIN_WALL / 2, BIN_WALL / 2), (0, -outer, outer - BIN_WALL / 2, BIN_WALL / 2)]
        ):
            body.add_geom(name=f"target_wall{i}", type=box, pos=[px, py, h], size=[sx, sy, h], **_STATIC_GEOM)


def build_scene(family: str) -> tuple[mujoco.MjModel, SceneLayout]:
    """Compile the scene of ``family`` ("stack", "peg" or "bin")."""
    move, target, distractor = FAMILY_OBJECTS[family]
    spec = mujoco.MjSpec.from_file(str(ASSET))
    _add_free_object(spec, "move", move)
    if target in (CUBE, PEG):
        _add_free_object(spec, "target", target)
    else:
        _add_static_target(spec, target)
    # The reverse variants' goal: a white square on the table (visual only;
    # a mocap body so its place is part of the saved physics state).
    spot = spec.worldbody.add_body(name="spot", mocap=True, pos=[0.2, 0.1, 0.0])
    spot.add_geom(name="spot_geom", type=mujoco.mjtGeom.mjGEOM_BOX, size=[SPOT_HALF, SPOT_HALF, 0.0005],
                  pos=[0, 0, 0.0005], contype=0, conaffinity=0, rgba=[0.97, 0.97, 0.97, 1.0])
    roles = ("move", "target")
    if distractor is not None:
        _add_free_object(spec, "distractor", distractor)
        roles += ("distractor",)
    model = spec.compile()

    joint_ids = [model.joint(n).id for n in JOINT_NAMES]
    body = {r: model.body(r).id for r in roles}
    free_qpos, free_dof, mocap = {}, {}, {}
    for r in roles:
        if model.body_mocapid[body[r]] >= 0:
            mocap[r] = int(model.body_mocapid[body[r]])
        else:
            j = model.joint(f"{r}_free").id
            free_qpos[r] = int(model.jnt_qposadr[j])
            free_dof[r] = int(model.jnt_dofadr[j])
    role_geoms = {r: np.flatnonzero(model.geom_bodyid == body[r]) for r in roles}
    layout = SceneLayout(
        arm_qpos=model.jnt_qposadr[joint_ids].copy(),
        arm_dof=model.jnt_dofadr[joint_ids].copy(),
        tcp_site=model.site("tcp").id,
        pad_geoms=np.array([model.geom("pad_left").id, model.geom("pad_right").id]),
        body=body,
        free_qpos=free_qpos,
        free_dof=free_dof,
        mocap=mocap,
        spot_mocap=int(model.body_mocapid[model.body("spot").id]),
        spot_geom=model.geom("spot_geom").id,
        role_geoms=role_geoms,
        roles=roles,
    )
    return model, layout
