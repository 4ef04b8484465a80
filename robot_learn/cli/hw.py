"""``robot-learn hw``: find-port, scan, calibrate, teleop, record, replay, run-policy.

Every command that moves an arm goes through the same `ServoArm` safety layer
(limits, step clipping, watchdog, torque off on Ctrl-C/exit)."""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any, Callable, Sequence

import numpy as np

from robot_learn.hardware import (
    DynamixelBus, FeetechBus, JOINT_NAMES, ROBOTS, RateLoop, ServoBusError, find_port, make_arm,
)
from robot_learn.hardware.bus import Motor

VENDORS = {"feetech": (FeetechBus, "sts3215"), "dynamixel": (DynamixelBus, "xl430-w250")}


def _arm_args(p: argparse.ArgumentParser, prefix: str = "", default_robot: str = "so101_follower") -> None:
    dash = f"--{prefix}-" if prefix else "--"
    p.add_argument(f"{dash}robot", default=default_robot, help=f"one of: {', '.join(ROBOTS)}")
    p.add_argument(f"{dash}port", required=True)
    p.add_argument(f"{dash}id", default="default", help="robot id (names its calibration file)")


def _make(args: argparse.Namespace, prefix: str = "", **kwargs: Any):
    get = lambda k: getattr(args, f"{prefix}_{k}" if prefix else k)  # noqa: E731
    return make_arm(get("robot"), get("port"), robot_id=get("id"),
                    calibration_dir=args.calibration_dir, **kwargs)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="robot-learn hw", description=__doc__)
    parser.add_argument("--calibration-dir", default=None,
                        help="default: $ROBOT_LEARN_CALIBRATION_DIR or ~/.cache/robot_learn/calibration")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("find-port", help="identify an adapter's port by unplugging it")
    p = sub.add_parser("scan", help="list the servo IDs answering on a port")
    p.add_argument("--port", required=True)
    p.add_argument("--vendor", choices=list(VENDORS), required=True)
    p.add_argument("--max-id", type=int, default=20)
    p.add_argument("--baudrate", type=int, default=1_000_000)
    p = sub.add_parser("calibrate", help="record homing offsets and ranges of motion")
    _arm_args(p)
    for name in ("teleop", "record"):
        p = sub.add_parser(name, help="leader drives follower" + (" and episodes are recorded" if name == "record" else ""))
        _arm_args(p, "leader", "so101_leader")
        _arm_args(p, "follower", "so101_follower")
        p.add_argument("--hz", type=float, default=50.0)
        p.add_argument("--duration", type=float, default=30.0, help="seconds (per episode)")
        if name == "record":
            p.add_argument("--store", required=True)
            p.add_argument("--task", required=True)
            p.add_argument("--instruction", default="")
            p.add_argument("--episodes", type=int, default=1)
            p.add_argument("--operator", default="")
    p = sub.add_parser("replay", help="send a stored episode's actions to a follower")
    _arm_args(p)
    p.add_argument("--store", required=True)
    p.add_argument("--episode", type=int, default=0)
    p.add_argument("--hz", type=float, default=30.0)
    p = sub.add_parser("run-policy", help="drive a follower with a callable obs -> joint action")
    _arm_args(p)
    p.add_argument("--policy", required=True, help="module:callable taking the observation dict")
    p.add_argument("--hz", type=float, default=30.0)
    p.add_argument("--duration", type=float, default=30.0)
    return parser


def _load_callable(spec: str) -> Callable[[dict], Any]:
    module, _, attr = spec.partition(":")
    if not attr:
        raise ValueError(f"--policy must look like 'module:callable', got {spec!r}")
    return getattr(importlib.import_module(module), attr)


def _run(args: argparse.Namespace) -> int:
    if args.command == "find-port":
        print(find_port())
        return 0
    if args.command == "scan":
        bus_cls, model = VENDORS[args.vendor]
        bus = bus_cls(args.port, {"probe": Motor(1, model)}, baudrate=args.baudrate)
        bus.connect(handshake=False)
        try:
            found = bus.scan(range(0, args.max_id + 1))
        finally:
            bus.disconnect(disable_torque=False)
        for motor_id, number in found.items():
            print(f"id {motor_id}: model number {number}")
        if not found:
            print(f"no servos answered on {args.port} (ids 0..{args.max_id})")
        return 0 if found else 1
    if args.command == "calibrate":
        arm = _make(args)
        try:
            cal = arm.calibrate()
        finally:
            arm.disconnect()
        print(f"saved {arm.calibration_file} ({len(cal)} joints)")
        return 0
    if args.command in ("teleop", "record"):
        from robot_learn.hardware.teleop import record_episode, run_teleop
        leader, follower = _make(args, "leader"), _make(args, "follower")
        with leader, follower:
            for i in range(getattr(args, "episodes", 1)):
                episode = run_teleop(leader, follower, rate_hz=args.hz, duration_s=args.duration)
                print(f"episode {i}: {episode.stats.summary()}")
                if args.command == "record":
                    index = record_episode(args.store, episode, args.task, args.instruction,
                                           seed=i, operator=args.operator)
                    print(f"recorded episode {index} into {args.store}")
        return 0
    if args.command == "replay":
        from robot_learn.data import EpisodeStore
        actions = EpisodeStore.open(args.store).episode(args.episode)["steps"]["action"]
        with _make(args) as arm:
            stats = RateLoop(args.hz).run(lambda i: bool(arm.send_action(actions[i])), iterations=len(actions))
        print(f"replayed {len(actions)} steps: {stats.summary()}")
        return 0
    if args.command == "run-policy":
        policy = _load_callable(args.policy)
        with _make(args) as arm:
            def step(_: int) -> None:
                action = policy(arm.get_observation())
                arm.send_action(action if isinstance(action, dict) else np.asarray(action))
            stats = RateLoop(args.hz).run(step, duration_s=args.duration)
        print(f"ran policy: {stats.summary()}")
        return 0
    raise AssertionError(args.command)


def main(argv: Sequence[str]) -> int:
    """Entry point for ``robot-learn hw ...``; returns the exit status."""
    args = _parser().parse_args(list(argv))
    try:
        return _run(args)
    except (ServoBusError, ValueError) as exc:
        print(f"robot-learn hw {args.command}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


__all__ = ["main", "JOINT_NAMES"]
