"""The easy reverse of Meta-World's ``peg-insert-side``, in that task's own scene.

``metaworld/peg-insert-side-reverse`` resets as ``peg-insert-side`` does (same seed, same
box) and then puts the peg into the hole, 6.6 cm deep (the hard task's goal). The task is to
pull it out, lay it on the table where ``peg-insert-side`` draws its peg's starts, let
go and bring the hand back to its start pose, so a successful episode, played backwards,
is a ``peg-insert-side`` demonstration from one of its own starts.

Meta-World's ``peg-unplug-side`` is not that reverse: it has another object (a plug, not
the 24 cm peg), another wall, boxes drawn 0.1 m further in x, and its observation reports
another point of the object and a pull-out goal instead of the hole. Reversed, its
episodes would start from scenes ``peg-insert-side`` never shows.

:class:`PegUnplugExpert` is our scripted expert of the easy task, in Meta-World's action
space (hand displacement x, y, z in [-1, 1], times 1 cm per step, and gripper effort).
"""

from __future__ import annotations

import numpy as np

from .metaworld_tasks import DisplacementExpert, MetaWorldEnv, metaworld_instruction
from .registry import METAWORLD_REVERSE

REVERSE_PAIRS = {f"metaworld/{easy}": f"metaworld/{hard}" for easy, hard in METAWORLD_REVERSE.items()}
# The peg's body, inserted, against the hole's target site: its head at the target, resting
# on the hole's floor, 6.6 cm inside the box's face. (Pushed fully home, at x 0.045, the
# grasp point lies so near the face that the open gripper hits the box.)
INSERTED = np.array([0.10, 0.0, -0.015])
HOLD = np.array([0.0, 0.0, 0.02])          # the hand holds the peg this far above its grasp site
GRASP = np.array([0.03, 0.0, 0.01])        # the pegGrasp site against the peg's body
HAND_START = np.array([0.0, 0.6, 0.2])     # Meta-World's hand_init_pos for this task
PEG_LOW, PEG_HIGH = np.array([0.0, 0.5]), np.array([0.2, 0.7])  # peg-insert-side's peg starts (x, y)
BOX_CLEARANCE = 0.1   # peg-insert-side redraws a peg start nearer the box than this (xy)
ON_TABLE_Z = 0.035    # a peg resting on the table has its body below this
AT_REST = 0.02        # the hand is back when this near its start pose


class PegInsertReverseEnv(MetaWorldEnv):
    """``peg-insert-side``'s scene starting at its goal; success: the peg lies on the table
    in the forward task's start range, clear of the box, released, the hand at rest."""

    def __init__(self, *, max_steps: int, cameras: tuple[str, ...] = (), image_size: int | tuple[int, int] = 96,
                 render_mode: str | None = None):
        super().__init__("peg-insert-side", max_steps=max_steps, cameras=cameras, image_size=image_size,
                         render_mode=render_mode)
        self.name = "metaworld/peg-insert-side-reverse"
        self.instruction = metaworld_instruction("peg-unplug-side")

    def _reset(self, seed: int) -> tuple[bool, float]:
        super()._reset(seed)
        self.mw._set_obj_xyz(self.mw._target_pos + INSERTED)
        self.raw_obs = self.mw._get_obs()
        return False, 0.0

    def placed(self) -> dict[str, bool]:
        """The success test's parts, each read from the simulator."""
        peg = self.mw.data.qpos[9:12]
        box = self.mw.model.body("box").pos
        hand = self.raw_obs[:3]
        return {"on_table": bool(peg[2] < ON_TABLE_Z),
                "in_start_range": bool(np.all(peg[:2] >= PEG_LOW - 0.02) and np.all(peg[:2] <= PEG_HIGH + 0.02)),
                "clear_of_box": bool(np.linalg.norm(peg[:2] - box[:2]) >= BOX_CLEARANCE),
                "released": bool(self.raw_obs[3] > 0.5),
                "at_rest": bool(np.linalg.norm(hand - HAND_START) < AT_REST)}

    def _step(self, action: np.ndarray) -> tuple[float, bool, float]:
        self.raw_obs, _, _, _, _ = self.mw.step(action)
        parts = self.placed()
        progress = sum(parts.values()) / len(parts)
        return progress, all(parts.values()), progress


class PegUnplugExpert(DisplacementExpert):
    """Scripted expert of :class:`PegInsertReverseEnv`: over the peg, down, grasp, pull it
    out along +x, lift, carry it to a spot drawn (from ``seed``) in ``peg-insert-side``'s
    start range clear of the box, lower, let go, lift and go back to the start pose.
    ``noise``: Gaussian action noise (std, in action units)."""

    LIFT_Z = 0.2
    PUT_DOWN_Z = 0.06  # hand height that sets the held peg on the table (the hand stops at 0.05)
    P_GAIN = 25.0      # action per metre of error, as Meta-World's policies move

    def reset(self, env) -> None:
        mw = env.unwrapped.mw
        box = mw.model.body("box").pos[:2]
        while True:
            spot = self.rng.uniform(PEG_LOW, PEG_HIGH)
            if np.linalg.norm(spot - box) >= BOX_CLEARANCE + 0.02:
                break
        self.drop = np.array([*(spot + GRASP[:2]), self.PUT_DOWN_Z])  # the hand over the spot
        self.phase, self.held, self.pull_to = 0, 0, None

    @property
    def at_rest(self) -> bool:
        """Back at the start pose, the task done."""
        return self.phase == 10

    def _target(self, hand: np.ndarray, grasp: np.ndarray) -> tuple[np.ndarray, float]:
        """Advance the phase when its target is reached; the hand target and the gripper effort."""
        close, opened = 0.8, -1.0
        if self.phase == 2 and self.held >= 12:           # closed long enough: pull out
            self.phase, self.pull_to = 3, hand + np.array([0.2, 0.0, 0.0])
        if self.phase == 7 and self.held >= 12:           # open long enough: lift off
            self.phase = 8
        hold = grasp + HOLD
        targets = {0: (hold + np.array([0.0, 0.0, 0.1]), opened), 1: (hold, opened), 2: (hold, close),
                   3: (self.pull_to, close), 4: (np.array([*hand[:2], self.LIFT_Z]), close),
                   5: (np.array([*self.drop[:2], self.LIFT_Z]), close), 6: (self.drop, close),
                   7: (self.drop, opened), 8: (np.array([*self.drop[:2], self.LIFT_Z]), opened),
                   9: (HAND_START, opened), 10: (HAND_START, opened)}
        target, effort = targets[self.phase]
        tolerance = 0.012 if self.phase in (1, 6) else 0.02
        if self.phase in (2, 7):
            self.held += 1
        elif self.phase < 10 and np.linalg.norm(hand - target) < tolerance:
            self.phase, self.held = self.phase + 1, 0
        return target, effort

    def act(self, obs, env) -> np.ndarray:
        raw = env.unwrapped.raw_obs
        target, effort = self._target(raw[:3], raw[4:7])
        return self.noisy(np.append(self.P_GAIN * (target - raw[:3]), effort))


def copy_scene(source, target) -> None:
    """Put ``target`` (a Meta-World adapter env of the same scene, reset with the same seed,
    so its box stands where ``source``'s does) in ``source``'s simulator state: joints,
    velocities and the hand's mocap target. Replays a reversed episode from where it began."""
    import mujoco

    src, dst = source.unwrapped.mw, target.unwrapped.mw
    if src.model.nq != dst.model.nq or not np.allclose(src.model.body("box").pos, dst.model.body("box").pos):
        raise ValueError("copy_scene needs the same scene with the same box; reset both with the same seed")
    dst.set_state(src.data.qpos.copy(), src.data.qvel.copy())
    dst.data.mocap_pos[:] = src.data.mocap_pos
    dst.data.mocap_quat[:] = src.data.mocap_quat
    mujoco.mj_forward(dst.model, dst.data)
    target.unwrapped.raw_obs = dst._get_obs()
