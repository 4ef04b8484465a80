"""The tabletop gymnasium env shared by every task.

One ``TabletopEnv`` = one family scene + one variant's ``FamilyTask``.  It owns
the physics (10 Hz control, 50 substeps of 2 ms), action decoding (pose mode
through the closed-form IK, or joint mode), observations, cameras and exact
state save/restore.
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import mujoco
import numpy as np
from gymnasium import spaces

from . import arm
from .rendering import CameraRenderer, check_cameras
from .scene import COLOUR_NAMES, PALETTE, build_scene
from .start_spread import DEFAULT_START_SPREAD
from .task_base import DEFAULT_DROP_SPOT, N_PARAMS, FamilyTask, quat_of_yaw, yaw_of_quat

FAMILIES = ("stack", "peg", "bin")
ACTION_MODES = ("pose", "joint")
CONTROL_HZ = 10
N_SUBSTEPS = 50  # 50 x 2 ms = one 0.1 s control step
HOME_TCP = (0.15, 0.0, 0.16)
# Servo-like speed cap: a joint target moves at most this far per control
# step (4 rad/s), like a real arm's profile velocity / LeRobot's
# max_relative_target.  Scripted motions stay well below it; wild commands
# (random actions) cannot fling objects across the table.
MAX_TARGET_STEP = 0.4  # grasp centre at reset, above the workspace
STATE_VERSION = 1.0
# The "objects" observation: per slot pose (7) + colour one-hot; one slot per role.
OBJECT_SLOTS = 3
OBJECT_FEATURES = 7 + len(COLOUR_NAMES)
OBJECTS_DIM = OBJECT_SLOTS * OBJECT_FEATURES
# TabletopEnv.scene_labels(): privileged targets for training frame encoders.
SCENE_LABELS = ("move_x", "move_y", "move_z", "move_cos4yaw", "move_sin4yaw",
                "target_x", "target_y", "target_z", "target_cos4yaw", "target_sin4yaw",
                "tcp_x", "tcp_y", "tcp_z", "gripper", "goal_x", "goal_y", "goal_z")
SCENE_LABEL_DIM = len(SCENE_LABELS)
POSE_LABEL_DIM = 10  # the objects' part of SCENE_LABELS (both roles' position and 4-fold yaw)


def object_pose_labels(env_state: np.ndarray) -> np.ndarray:
    """``[N, 14]`` ``env_state`` rows (per role: position, (w, x, y, z) quaternion) ->
    ``[N, 10]``, the first ``POSE_LABEL_DIM`` of ``SCENE_LABELS``: per role, position
    and (cos 4y, sin 4y) of the yaw (cubes, square pegs and bins repeat every quarter turn)."""
    env_state = np.asarray(env_state, dtype=np.float64)
    out = np.empty((len(env_state), POSE_LABEL_DIM), dtype=np.float32)
    for i in range(2):
        yaw = yaw_of_quat(env_state[:, 7 * i + 3: 7 * i + 7])
        out[:, 5 * i: 5 * i + 3] = env_state[:, 7 * i: 7 * i + 3]
        out[:, 5 * i + 3] = np.cos(4.0 * yaw)
        out[:, 5 * i + 4] = np.sin(4.0 * yaw)
    return out

# get_state() header: version, family, variant, template, step count, 3 colours.
_HEADER = 8
# An ordered string, not a set: gymnasium's shared memory (AsyncVectorEnv)
# encodes Text as character indices, and a set's order differs per process.
_INSTRUCTION_CHARSET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ,.'-"

# Pose-action bounds (the IK clamps further to what the arm reaches).
POSE_LOW = np.array([-0.1, -0.35, 0.0, -math.pi, 0.0], dtype=np.float32)
POSE_HIGH = np.array([0.4, 0.35, 0.35, math.pi, 1.0], dtype=np.float32)


class TabletopEnv(gym.Env):
    """A pick-and-place task on the SO-101-like arm.

    Args:
        name: task name (e.g. "stack"); ``family`` / ``forward`` say which scene
            and variant it is.
        task: the variant's ``FamilyTask``.
        max_steps: episode length; ``truncated`` is set when reached.
        cameras: camera names to render into ``obs["images"]`` (may be empty).
        image_size: side of the square images, or (height, width).
        action_mode: "pose" (x, y, z, yaw, gripper) or "joint" (6 joint targets).
        render_mode: None or "rgb_array" (``render()`` returns the front view).
        drop_spot: reverse variants' white square ``beside`` the target (the default) or
            ``anywhere`` on the reachable ring, where the object then counts as put down
            anywhere on the table clear of the target (``DROP_SPOTS`` in :mod:`.task_base`).
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": CONTROL_HZ}

    def __init__(
        self,
        name: str,
        task: FamilyTask,
        max_steps: int,
        cameras: tuple[str, ...] = ("front", "wrist"),
        image_size: int | tuple[int, int] = 96,
        action_mode: str = "pose",
        render_mode: str | None = None,
        drop_spot: str = DEFAULT_DROP_SPOT,
    ):
        task.check_drop_spot(drop_spot)
        if action_mode not in ACTION_MODES:
            raise ValueError(f"unknown action_mode {action_mode!r}; valid modes: {', '.join(ACTION_MODES)}")
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"unknown render_mode {render_mode!r}; valid: None, 'rgb_array'")
        if int(max_steps) < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps}")
        self.name = name
        self.task = task
        self.max_steps = int(max_steps)
        self.cameras = check_cameras(cameras)
        h, w = (image_size, image_size) if np.isscalar(image_size) else tuple(image_size)
        if int(h) < 1 or int(w) < 1:
            raise ValueError(f"image_size must be positive, got {image_size!r}")
        self.image_hw = (int(h), int(w))
        self.action_mode = action_mode
        self.render_mode = render_mode
        self.drop_spot = drop_spot

        self.model, self.layout = build_scene(task.family)
        self.data = mujoco.MjData(self.model)
        self._state_spec = mujoco.mjtState.mjSTATE_INTEGRATION
        self._mj_state_size = mujoco.mj_stateSize(self.model, self._state_spec)
        self._camera_renderer = CameraRenderer(self.model, *self.image_hw) if self.cameras else None
        self._video_renderer: CameraRenderer | None = None
        self._ctrl_low = self.model.actuator_ctrlrange[:, 0].copy()
        self._ctrl_high = self.model.actuator_ctrlrange[:, 1].copy()
        # Only reverse variants show the goal square (it means nothing forward).
        self.model.geom_rgba[self.layout.spot_geom, 3] = 0.0 if task.forward else 1.0
        self._home_joints = np.append(arm.top_down_ik(*HOME_TCP, 0.0), arm.GRIPPER_OPEN)

        self.params = np.zeros(N_PARAMS)
        self.colours: dict[str, str] = {}
        self.template_index = 0
        self.instruction = ""
        self.steps = 0
        self._contact_cache: dict[str, tuple[bool, bool, bool]] = {}

        self.action_space = spaces.Box(
            low=POSE_LOW if action_mode == "pose" else self._ctrl_low.astype(np.float32),
            high=POSE_HIGH if action_mode == "pose" else self._ctrl_high.astype(np.float32),
            dtype=np.float32,
        )
        image_spaces = {c: spaces.Box(0, 255, (*self.image_hw, 3), np.uint8) for c in self.cameras}
        self.observation_space = spaces.Dict(
            {
                "state": spaces.Box(-np.inf, np.inf, (10,), np.float32),
                "env_state": spaces.Box(-np.inf, np.inf, (14,), np.float32),
                "objects": spaces.Box(-np.inf, np.inf, (OBJECTS_DIM,), np.float32),
                "images": spaces.Dict(image_spaces),
                "instruction": spaces.Text(max_length=200, charset=_INSTRUCTION_CHARSET),
            }
        )

    # ----- gymnasium API ---------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """New episode from ``seed``; ``options={"state": s}`` starts from a saved state.

        ``options={"swap_roles": True}`` (forward variants) gives the scene this seed
        would give, with the instruction naming the look-alike object instead (see
        ``FamilyTask.swap_roles``); success follows the instruction given.
        ``options={"start_spread": "narrow"}`` keeps the objects near one nominal layout
        (:mod:`.start_spread`); the default, ``"wide"``, is the whole reachable ring.
        """
        super().reset(seed=seed)
        if options and "state" in options:
            return self.reset_to_state(options["state"]), self._info()
        swap = bool(options and options.get("swap_roles", False))
        if swap and not self.task.forward:
            raise ValueError(f"swap_roles is only for forward tasks (stack, peg_insert, bin_place); {self.name!r} is a reverse task")
        rng = self.np_random
        spread = (options or {}).get("start_spread", DEFAULT_START_SPREAD)
        self.params = self.task.sample_params(rng, spread, self.drop_spot)  # ValueError lists the valid spreads
        names = rng.choice(len(COLOUR_NAMES), size=len(self.layout.roles), replace=False)
        self.colours = {r: COLOUR_NAMES[i] for r, i in zip(self.layout.roles, names)}
        self.colours.update(self.task.fixed_colours or {})
        self.template_index = int(rng.integers(len(self.task.templates)))
        if swap:
            self.params, self.colours = self.task.swap_roles(self.params, self.colours)
        self._apply_colours()

        mujoco.mj_resetData(self.model, self.data)
        self.data.qpos[self.layout.arm_qpos] = self._home_joints
        self.data.qpos[self.model.joint("gripper_mirror").qposadr[0]] = arm.GRIPPER_OPEN
        self.data.ctrl[:] = self._home_joints
        self._place_objects()
        # Let the objects settle onto their supports before the first frame.
        mujoco.mj_step(self.model, self.data, nstep=N_SUBSTEPS)
        self.data.time = 0.0
        mujoco.mj_forward(self.model, self.data)
        self.steps = 0
        self._contact_cache = {}
        return self._obs(), self._info()

    def step(self, action):
        ctrl = self._decode_action(action)  # validates before touching physics
        self.data.ctrl[:] = ctrl
        mujoco.mj_step(self.model, self.data, nstep=N_SUBSTEPS)
        # mj_step leaves derived quantities at the pre-integration state;
        # one forward pass makes poses and contacts match the new qpos.
        mujoco.mj_forward(self.model, self.data)
        self._contact_cache = {}
        self.steps += 1
        info = self._info()
        terminated = info["success"]
        truncated = (not terminated) and self.steps >= self.max_steps
        return self._obs(), float(terminated), terminated, truncated, info

    def render(self):
        """Front-camera frame (256 x 256) for videos; None without render_mode."""
        if self.render_mode != "rgb_array":
            return None
        if self._video_renderer is None:
            self._video_renderer = CameraRenderer(self.model, 256, 256)
        return self._video_renderer.render(self.data, ("front",))["front"]

    def close(self):
        for r in (self._camera_renderer, self._video_renderer):
            if r is not None:
                r.close()

    # ----- actions ---------------------------------------------------------------
    def _decode_action(self, action) -> np.ndarray:
        size = 5 if self.action_mode == "pose" else 6
        a = np.asarray(action)
        if a.dtype.kind != "f":
            raise ValueError(
                f"action dtype must be floating point (float32), got {a.dtype}; "
                f"expected shape ({size},) for action_mode={self.action_mode!r}"
            )
        if a.shape != (size,):
            raise ValueError(f"action shape must be ({size},) for action_mode={self.action_mode!r}, got {a.shape}")
        if not np.isfinite(a).all():
            raise ValueError(f"action contains NaN or Inf: {a.tolist()}")
        a = a.astype(np.float64)
        if self.action_mode == "joint":
            target = np.clip(a, self._ctrl_low, self._ctrl_high)
        else:
            target = np.append(arm.top_down_ik(a[0], a[1], a[2], a[3]), arm.gripper_target(a[4]))
        prev = self.data.ctrl[:5]
        target[:5] = np.clip(target[:5], prev - MAX_TARGET_STEP, prev + MAX_TARGET_STEP)
        return target

    def gripper_command(self) -> float:
        """Current gripper command in [0, 1] (from the actuator target)."""
        return 1.0 - float(self.data.ctrl[5]) / arm.GRIPPER_OPEN

    # ----- scene queries (used by tasks and experts) -----------------------------
    def object_pose(self, role: str) -> tuple[np.ndarray, np.ndarray]:
        """World position and (w, x, y, z) quaternion of a role's body."""
        b = self.layout.body[role]
        return self.data.xpos[b], self.data.xquat[b]

    def object_speed(self, role: str) -> float:
        dof = self.layout.free_dof.get(role)
        return 0.0 if dof is None else float(np.linalg.norm(self.data.qvel[dof : dof + 3]))

    def tcp_pose(self) -> tuple[np.ndarray, float]:
        """Grasp-centre position and gripper yaw."""
        q = self.data.qpos[self.layout.arm_qpos]
        return self.data.site_xpos[self.layout.tcp_site], arm.tcp_yaw(q[0], q[4])

    def pad_contacts(self, role: str = "move") -> tuple[bool, bool, bool]:
        """(left pad touches the object of ``role``, right pad touches it, any pad touches it)."""
        if role not in self._contact_cache:
            n = self.data.ncon
            left = right = False
            if n:
                g = self.data.contact.geom[:n]
                obj = np.isin(g, self.layout.role_geoms[role])
                pl, pr = self.layout.pad_geoms
                left = bool(np.any((obj[:, 0] & (g[:, 1] == pl)) | (obj[:, 1] & (g[:, 0] == pl))))
                right = bool(np.any((obj[:, 0] & (g[:, 1] == pr)) | (obj[:, 1] & (g[:, 0] == pr))))
            self._contact_cache[role] = (left, right, left or right)
        return self._contact_cache[role]

    def is_held(self) -> bool:
        """Both finger pads touch the object being moved (``task.moved_role``)."""
        left, right, _ = self.pad_contacts(self.task.moved_role(self))
        return left and right

    def is_released(self) -> bool:
        """No finger pad touches the object being moved."""
        return not self.pad_contacts(self.task.moved_role(self))[2]

    def shift_object(self, role: str, offset_xy: np.ndarray) -> None:
        """Move a free object horizontally by ``offset_xy`` (m) and stop it (a push from
        outside the task, e.g. a disturbance); physics and contacts are updated."""
        if role not in self.layout.free_qpos:
            raise ValueError(f"role {role!r} is not a free object here; free: {', '.join(self.layout.free_qpos)}")
        a, dof = self.layout.free_qpos[role], self.layout.free_dof[role]
        self.data.qpos[a : a + 2] += np.asarray(offset_xy, dtype=np.float64)
        self.data.qvel[dof : dof + 6] = 0.0
        mujoco.mj_forward(self.model, self.data)
        self._contact_cache = {}

    # ----- observations ----------------------------------------------------------
    def _obs(self) -> dict[str, Any]:
        q = self.data.qpos[self.layout.arm_qpos]
        tcp, yaw = self.tcp_pose()
        state = np.empty(10, dtype=np.float32)
        state[:6] = q
        state[6:9] = tcp
        state[9] = yaw
        env_state = np.empty(14, dtype=np.float32)
        for i, role in enumerate(("move", "target")):
            pos, quat = self.object_pose(role)
            env_state[7 * i : 7 * i + 3] = pos
            env_state[7 * i + 3 : 7 * i + 7] = quat
        images = self._camera_renderer.render(self.data, self.cameras) if self._camera_renderer else {}
        return {"state": state, "env_state": env_state, "objects": self._objects(), "images": images,
                "instruction": self.instruction}

    def _objects(self) -> np.ndarray:
        """Every object's pose and colour, in slots ordered by colour rather than role.

        ``env_state`` lists the objects by role (object to move first), so it already
        says which object the instruction means. Here slot order follows the palette,
        which a role swap (``reset(options={"swap_roles": True})``) leaves unchanged:
        only the instruction tells the objects' roles apart. Per slot: position (3),
        (w, x, y, z) quaternion (4), colour one-hot (len(COLOUR_NAMES)); unused slots
        (a family without a distractor) are zeros. The task sets the order
        (``object_slot_order``): ``bin_either`` lists the cube nearest the gripper first.
        """
        out = np.zeros((OBJECT_SLOTS, OBJECT_FEATURES), dtype=np.float32)
        for slot, role in enumerate(self.task.object_slot_order(self)):
            pos, quat = self.object_pose(role)
            out[slot, :3] = pos
            out[slot, 3:7] = quat
            out[slot, 7 + COLOUR_NAMES.index(self.colours[role])] = 1.0
        return out.reshape(-1)

    def scene_labels(self) -> np.ndarray:
        """Privileged training targets for frame encoders, in ``SCENE_LABELS`` order.

        Per role (object to move, then target): position (3) and the yaw as
        (cos 4y, sin 4y), since cubes, square pegs and bins look the same every quarter
        turn; then the grasp centre (3), the gripper command (1) and where the object
        must be put down (3: on or in the target going forward, the white square in
        reverse; the square's side is fixed by the target's full yaw, which the 4-fold
        yaw labels leave open). Role order, not colour order, so predicting them from a
        frame means finding the object the instruction names. Never an observation: sim
        training only.
        """
        out = np.empty(SCENE_LABEL_DIM, dtype=np.float32)
        poses = np.concatenate([np.concatenate(self.object_pose(role)) for role in ("move", "target")])
        out[:POSE_LABEL_DIM] = object_pose_labels(poses[None])[0]
        out[10:13] = self.tcp_pose()[0]
        out[13] = self.gripper_command()
        out[14:17] = self.task.move_goal(self)
        return out

    def _info(self) -> dict[str, Any]:
        success = bool(self.task.success(self))
        return {
            "success": success,
            "progress": float(self.task.progress(self, success)),
            "phase": int(self.task.phase(self, success)),
        }

    # ----- scene set-up ----------------------------------------------------------
    def _apply_colours(self) -> None:
        for role, colour in self.colours.items():
            self.model.geom_rgba[self.layout.role_geoms[role], :3] = PALETTE[colour]
        self.instruction = self.task.instruction(self.template_index, self.colours)

    def _place_objects(self) -> None:
        p, lay, task = self.params, self.layout, self.task
        poses = {
            "move": (task.start_pose_of_move(p), p[2]),
            "target": (np.array([p[3], p[4], task.target_kind.rest_z]), p[5]),
        }
        self.data.mocap_pos[lay.spot_mocap] = [p[9], p[10], 0.0]
        self.data.mocap_quat[lay.spot_mocap] = quat_of_yaw(p[11])
        if "distractor" in lay.roles:
            poses["distractor"] = (np.array([p[6], p[7], task.distractor_kind.rest_z]), p[8])
        for role, (pos, yaw) in poses.items():
            pos = pos + [0.0, 0.0, 0.001]  # start 1 mm up; settles in reset
            if role in lay.mocap:
                self.data.mocap_pos[lay.mocap[role]] = pos - [0.0, 0.0, 0.001]
                self.data.mocap_quat[lay.mocap[role]] = quat_of_yaw(yaw)
            else:
                a = lay.free_qpos[role]
                self.data.qpos[a : a + 3] = pos
                self.data.qpos[a + 3 : a + 7] = quat_of_yaw(yaw)

    # ----- exact state -----------------------------------------------------------
    def get_state(self) -> np.ndarray:
        """The whole scene as a float64 vector (physics, colours, task, counters)."""
        header = np.full(_HEADER, -1.0)
        header[0] = STATE_VERSION
        header[1] = FAMILIES.index(self.task.family)
        header[2] = 0.0 if self.task.forward else 1.0
        header[3] = self.template_index
        header[4] = self.steps
        for i, role in enumerate(self.layout.roles):
            header[5 + i] = COLOUR_NAMES.index(self.colours[role])
        physics = np.empty(self._mj_state_size)
        mujoco.mj_getState(self.model, self.data, physics, self._state_spec)
        return np.concatenate([header, self.params, physics])

    def set_state(self, state: np.ndarray) -> None:
        """Restore a ``get_state()`` vector exactly.

        A state from the other variant of the same family loads too (same
        scene); the instruction is then this variant's wording of the same
        colours.  That is how reversed episodes replay in the forward task.
        """
        s = np.asarray(state, dtype=np.float64)
        expected = _HEADER + N_PARAMS + self._mj_state_size
        if s.ndim != 1 or len(s) < _HEADER or s[0] != STATE_VERSION:
            raise ValueError(f"not a get_state() vector (version {STATE_VERSION}) for task {self.name!r}")
        family = FAMILIES[int(s[1])] if 0 <= s[1] < len(FAMILIES) else f"#{s[1]}"
        if family != self.task.family:
            raise ValueError(f"state is from the {family!r} family; task {self.name!r} is in the {self.task.family!r} family")
        if s.shape != (expected,):
            raise ValueError(f"state for task {self.name!r} must have shape ({expected},), got {s.shape}")
        self.template_index = int(s[3])
        self.steps = int(s[4])
        self.colours = {role: COLOUR_NAMES[int(s[5 + i])] for i, role in enumerate(self.layout.roles)}
        self.params = s[_HEADER : _HEADER + N_PARAMS].copy()
        self._apply_colours()
        mujoco.mj_setState(self.model, self.data, s[_HEADER + N_PARAMS :], self._state_spec)
        mujoco.mj_forward(self.model, self.data)
        self._contact_cache = {}

    def reset_to_state(self, state: np.ndarray) -> dict[str, Any]:
        """Load a saved state as the start of a new episode (step count 0); returns obs."""
        self.set_state(state)
        self.steps = 0
        return self._obs()
