"""``robot-learn hw``: find-port, scan, calibrate, teleop, record, replay, run-policy.

Every command that moves an arm goes through the same `ServoArm` safety layer
(limits, step clipping, watchdog, torque off on Ctrl-C/exit)."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Any, Callable, Sequence

import numpy as np

from robot_learn.cli.errors import OneLineArgumentParser, run_command
from robot_learn.hardware import (
    JOINT_NAMES, ROBOTS, DynamixelBus, FeetechBus, RateLoop, SafetyConfig, find_port, list_ports, make_arm,
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
                    calibration_dir=args.calibration_dir, timeout_ms=args.timeout_ms, **kwargs)


def _parser() -> argparse.ArgumentParser:
    parser = OneLineArgumentParser(prog="robot-learn hw", description=__doc__)
    parser.add_argument("--calibration-dir", default=None,
                        help="default: $ROBOT_LEARN_CALIBRATION_DIR or ~/.cache/robot_learn/calibration")
    parser.add_argument("--timeout-ms", type=float, default=20.0,
                        help="servo reply timeout beyond the packet's transmission time (retried twice)")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("find-port", help="identify an adapter's port by unplugging it")
    p.add_argument("--pattern", action="append", default=[],
                   help="also list paths matching this glob (repeatable), e.g. '/dev/serial/by-id/*'")
    p.add_argument("--settle", type=float, default=0.5, help="seconds to wait after the unplug")
    p = sub.add_parser("scan", help="list the servo IDs answering on a port")
    p.add_argument("--port", required=True)
    p.add_argument("--vendor", choices=list(VENDORS), required=True)
    p.add_argument("--max-id", type=int, default=20, help="scan ids 0..MAX_ID (default 20)")
    p.add_argument("--baudrate", type=int, default=1_000_000)
    p.add_argument("--retries", type=int, default=2,
                   help="extra pings of an id that does not answer (default 2); a silent id costs "
                        "about 2 x (retries + 1) x --timeout-ms")
    p.add_argument("--expect", default=None, metavar="IDS",
                   help="ids that must answer, e.g. 1-6 or 1,2,5 or 1-3,7; if any is silent, "
                        "exit 1 naming them")
    p = sub.add_parser("calibrate", help="record homing offsets and ranges of motion")
    _arm_args(p)
    for name in ("teleop", "record"):
        p = sub.add_parser(name, help="leader drives follower" + (" and episodes are recorded" if name == "record" else ""))
        _arm_args(p, "leader", "so101_leader")
        _arm_args(p, "follower", "so101_follower")
        p.add_argument("--leader-gripper-trigger", type=float, default=None, metavar="POS",
                       help="koch_leader only: hold the leader gripper at POS (0..100) as a spring-loaded trigger")
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
    p = sub.add_parser("run-policy", help="drive a follower with a saved policy or a callable obs -> joint action")
    _arm_args(p)
    p.add_argument("--policy", required=True,
                   help="a policy directory saved by robot_learn.policies (config.yaml + model.safetensors; "
                        "input 'state' = the arm's joints, joint-mode actions), or module:callable "
                        "taking the observation dict")
    p.add_argument("--hz", type=float, default=30.0, help="control loop rate")
    p.add_argument("--duration", type=float, default=30.0)
    p.add_argument("--interpolate", action="store_true",
                   help="policy directory only: predict a chunk at --policy-hz and interpolate it onto the loop")
    p.add_argument("--policy-hz", type=float, default=10.0, help="the rate the policy was trained at")
    p.add_argument("--instruction", default=None, help="language instruction, for policies that read one")
    p.add_argument("--max-step", type=float, default=None,
                   help="largest change per command in the arm's units (default: the arm's own limit)")
    p.add_argument("--seed", type=int, default=0, help="seed of the policy's sampling noise")
    return parser


def _load_callable(spec: str) -> Callable[[dict], Any]:
    module, _, attr = spec.partition(":")
    if not attr:
        raise ValueError(f"--policy must be a policy directory (config.yaml + model.safetensors) or "
                         f"'module:callable', got {spec!r}")
    return getattr(importlib.import_module(module), attr)


MAX_SERVO_ID = 252  # 253 and up are reserved (254 is the broadcast id)


def parse_ids(spec: str, option: str = "--expect") -> list[int]:
    """Servo ids from a spec like "1-6", "1,2,5" or "1-3,7" (sorted, without repeats)."""
    ids: set[int] = set()
    for part in spec.split(","):
        low, dash, high = part.strip().partition("-")
        try:
            first, last = int(low), int(high if dash else low)
        except ValueError:
            raise ValueError(f"{option} {spec!r}: {part.strip()!r} is not an id or a range; "
                             f"write ids like 1-6 or 1,2,5") from None
        if not 0 <= first <= last <= MAX_SERVO_ID:
            raise ValueError(f"{option} {spec!r}: {part.strip()!r} must be ids 0..{MAX_SERVO_ID}, low to high")
        ids.update(range(first, last + 1))
    return sorted(ids)


def _scan(args: argparse.Namespace) -> int:
    if not 0 <= args.max_id <= MAX_SERVO_ID:
        raise ValueError(f"--max-id must be in 0..{MAX_SERVO_ID}, got {args.max_id}")
    if args.retries < 0:
        raise ValueError(f"--retries must be >= 0, got {args.retries}")
    expected = parse_ids(args.expect) if args.expect is not None else []
    last_id = max([args.max_id, *expected])
    bus_cls, model = VENDORS[args.vendor]
    bus = bus_cls(args.port, {"probe": Motor(1, model)}, baudrate=args.baudrate, timeout_ms=args.timeout_ms)
    bus.connect(handshake=False)
    try:
        found = bus.scan(range(0, last_id + 1), retries=args.retries)
    finally:
        bus.disconnect(disable_torque=False)
    for motor_id, number in found.items():
        print(f"id {motor_id}: model number {number}")
    missing = [i for i in expected if i not in found]
    if missing:
        print(f"robot-learn hw scan: expected ids did not answer on {args.port}: "
              f"{', '.join(map(str, missing))} ({args.retries + 1} pings each, timeout {args.timeout_ms:g} ms)",
              file=sys.stderr)
        return 1
    if not found:
        print(f"no servos answered on {args.port} (ids 0..{last_id})")
        return 1
    return 0


def _run(args: argparse.Namespace, input_fn: Callable[[str], str]) -> int:
    if args.command == "find-port":
        print(find_port(input_fn=input_fn, list_fn=lambda: list_ports(args.pattern), settle_s=args.settle))
        return 0
    if args.command == "scan":
        return _scan(args)
    if args.command == "calibrate":
        arm = _make(args)
        try:
            cal = arm.calibrate(input_fn=input_fn)
        finally:
            arm.disconnect()
        print(f"saved {arm.calibration_file} ({len(cal)} joints)")
        return 0
    if args.command in ("teleop", "record"):
        from robot_learn.hardware.teleop import record_episode, run_teleop
        leader_kwargs = {}
        if args.leader_gripper_trigger is not None:
            if args.leader_robot != "koch_leader":
                raise ValueError(f"--leader-gripper-trigger needs --leader-robot koch_leader, "
                                 f"got {args.leader_robot!r}")
            leader_kwargs["gripper_trigger"] = args.leader_gripper_trigger
        leader, follower = _make(args, "leader", **leader_kwargs), _make(args, "follower")
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
        kwargs = {}
        if args.max_step is not None:
            kwargs["safety"] = SafetyConfig(max_relative_step=args.max_step)
        arm = _make(args, **kwargs)
        if os.path.isdir(args.policy):
            from robot_learn.loops.saved_policy_driver import SavedPolicyDriver  # torch: only when needed

            policy: Callable[[dict], Any] = SavedPolicyDriver(
                args.policy, arm, args.hz, interpolate=args.interpolate, policy_hz=args.policy_hz,
                instruction=args.instruction, seed=args.seed)
        elif args.interpolate:
            raise ValueError("--interpolate needs a policy directory (a callable returns one action per tick)")
        else:
            policy = _load_callable(args.policy)
        with arm:
            def step(_: int) -> None:
                action = policy(arm.get_observation())
                arm.send_action(action if isinstance(action, dict) else np.asarray(action))
            stats = RateLoop(args.hz).run(step, duration_s=args.duration)
        print(f"ran policy: {stats.summary()}; safety clipped {arm.safety.clip_events} values")
        return 0
    raise AssertionError(args.command)


def main(argv: Sequence[str], input_fn: Callable[[str], str] = input) -> int:
    """Entry point for ``robot-learn hw ...``; returns the exit status.

    `input_fn` answers the operator prompts of `find-port` and `calibrate` (default:
    the terminal), so those flows can be scripted."""
    return run_command("robot-learn hw", lambda args: _run(_parser().parse_args(args), input_fn), argv)


__all__ = ["main", "JOINT_NAMES"]
