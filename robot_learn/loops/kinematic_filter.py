"""The kinematic filter (reversed easy-task data, rev2fwd): re-time a pose-mode episode.

Rollouts of a learned policy idle, creep and rush the grasp; imitating them as they
are teaches the same. The filter picks new frame times, then rebuilds the episode:

1. **static frames** are dropped: a frame closer than ``static_distance`` (and
   ``static_yaw``) to the last kept one, with the gripper unchanged;
2. **slow stretches**, ``slow_min_frames`` or more kept frames each under
   ``slow_speed`` m/frame, are subsampled by arc length toward ``target_speed``;
3. **gripper events** (the command crossing 0.5) keep every frame within
   ``gripper_window`` frames, ``densify`` times as many (interpolated between).

Observations are interpolated at the new times (low-dim keys linearly, the yaw
unwrapped; images and step labels from the frame at or before) and the actions
rebuilt as absolute targets: the next frame's pose with this frame's gripper
(:func:`robot_learn.envs.reversal.frame_actions`). The speeds are rev2fwd's; its
±16-frame gripper window is for a faster control rate than our 10 Hz, so ours is 6
(the expert's settle and gripper steps).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from robot_learn.envs.reversal import EE_POSE, GRIPPER, check_pose_actions, frame_actions

# Per-step keys read between frames; every other key is taken from the frame at or before.
INTERPOLATED = ("state", "env_state", "objects", "progress", "timestamp")
YAW = EE_POSE.stop - 1  # the yaw column of ``state``


@dataclass
class KinematicFilter:
    """Settings of the filter (``kinematic:`` in ``configs/loop/reversed.yaml``)."""

    static_distance: float = 0.0005  # m from the last kept frame: closer is static
    static_yaw: float = 0.005        # rad from the last kept frame: closer is static
    slow_speed: float = 0.002        # m/frame: slower is slow
    slow_min_frames: int = 8         # a slow stretch is at least this long
    target_speed: float = 0.004      # m/frame: slow stretches are resampled toward it
    gripper_window: int = 6          # frames each side of a gripper change kept and densified
    densify: int = 2                 # frames per frame inside gripper windows

    def __post_init__(self) -> None:
        for name in ("static_distance", "static_yaw", "slow_speed", "target_speed"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"kinematic filter {name} must be >= 0, got {getattr(self, name)}")
        for name in ("slow_min_frames", "densify"):
            if getattr(self, name) < 1:
                raise ValueError(f"kinematic filter {name} must be >= 1, got {getattr(self, name)}")
        if self.gripper_window < 0:
            raise ValueError(f"kinematic filter gripper_window must be >= 0, got {self.gripper_window}")

    def times(self, poses: np.ndarray, gripper: np.ndarray) -> np.ndarray:
        """The new frame times (fractional indices into the episode, increasing, first
        and last frame kept) for end-effector ``poses`` ``[T, 4]`` and per-frame gripper
        commands ``[T]``."""
        poses, closed = np.asarray(poses, dtype=np.float64), np.asarray(gripper) > 0.5
        count = len(poses)
        events = np.flatnonzero(closed[1:] != closed[:-1]) + 1
        near = np.zeros(count, dtype=bool)
        for e in events:
            near[max(0, e - self.gripper_window): e + self.gripper_window] = True
        kept = self._drop_static(poses, near)
        kept = self._thin_slow(poses, near, kept)
        return self._densify(near, kept)

    def _drop_static(self, poses: np.ndarray, near: np.ndarray) -> list[int]:
        kept = [0]
        for t in range(1, len(poses)):
            last = poses[kept[-1]]
            moved = (np.linalg.norm(poses[t, :3] - last[:3]) >= self.static_distance
                     or abs(poses[t, 3] - last[3]) >= self.static_yaw)
            if moved or near[t] or t == len(poses) - 1:
                kept.append(t)
        return kept

    def _thin_slow(self, poses: np.ndarray, near: np.ndarray, kept: list[int]) -> list[int]:
        step = np.linalg.norm(np.diff(poses[kept, :3], axis=0), axis=1)  # step[i]: kept[i] -> kept[i + 1]
        slow = np.append(step < self.slow_speed, False) & ~near[kept]
        out, i = [], 0
        while i < len(kept):
            j = i
            while slow[j]:
                j += 1
            if j - i >= self.slow_min_frames:  # kept[i..j] moves slowly: resample by arc length
                travelled = 0.0
                out.append(kept[i])
                for k in range(i + 1, j):
                    travelled += step[k - 1]
                    if travelled >= self.target_speed - 1e-9:  # 1e-9: summed millimetres round down
                        out.append(kept[k])
                        travelled = 0.0
                i = j
            else:
                out.append(kept[i])
                i += 1
        return out

    def _densify(self, near: np.ndarray, kept: list[int]) -> np.ndarray:
        times: list[float] = []
        for a, b in zip(kept[:-1], kept[1:]):
            parts = self.densify if near[a] and near[b] else 1
            times.extend(a + (b - a) * np.arange(parts) / parts)
        times.append(kept[-1])
        return np.asarray(times, dtype=np.float64)

    def apply(self, steps: Mapping[str, np.ndarray], where: str = "episode") -> dict[str, np.ndarray]:
        """The episode re-timed by :meth:`times` with its actions rebuilt (see the module
        docstring). ValueError, naming ``where`` and the action mode, unless the actions
        are absolute poses."""
        check_pose_actions(steps, where)
        gripper = np.asarray(steps["action"])[:, GRIPPER]
        return resample(steps, self.times(np.asarray(steps["state"])[:, EE_POSE], gripper), gripper)


def resample(steps: Mapping[str, np.ndarray], times: np.ndarray, gripper: np.ndarray) -> dict[str, np.ndarray]:
    """``steps`` at fractional frame ``times``, with pose actions rebuilt from the
    resampled poses and the per-frame ``gripper`` commands (see the module docstring)."""
    times = np.asarray(times, dtype=np.float64)
    below = np.floor(times).astype(int)
    above = np.minimum(below + 1, len(gripper) - 1)
    weight = times - below
    out = {}
    for key, values in steps.items():
        values = np.asarray(values)
        if key in INTERPOLATED:
            if key == "state":
                values = values.astype(np.float64)
                values[:, YAW] = np.unwrap(values[:, YAW])
            w = weight.reshape(-1, *[1] * (values.ndim - 1))
            mixed = values[below] * (1.0 - w) + values[above] * w
            if key == "state":
                mixed[:, YAW] = (mixed[:, YAW] + np.pi) % (2 * np.pi) - np.pi
            out[key] = mixed.astype(np.asarray(steps[key]).dtype)
        else:
            out[key] = values[below]
    out["action"] = frame_actions(out["state"][:, EE_POSE], np.asarray(gripper)[below])
    if "policy_action" in out:
        out["policy_action"] = out["action"].copy()
    return out
