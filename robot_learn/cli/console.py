"""``robot-learn console``: the browser console on simulated HITL sessions.

Starts ``sessions`` sessions of the task on the robot config (the MuJoCo twin by
default), each driven by a saved policy (``policy_dir``) or the scripted stand-in,
with the operator config as the hands that act after a takeover; serves the
console (see :mod:`robot_learn.console`) and prints the address with its token.
Ctrl-C e-stops every session and exits.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from omegaconf import DictConfig, OmegaConf

from robot_learn.cli.errors import CLIError
from robot_learn.cli.hydra_app import run_hydra_app
from robot_learn.cli.policy_dirs import robot_settings_for_policy
from robot_learn.cli.settings import setting
from robot_learn.cli.train import instantiate_node


def _names(cfg: DictConfig, key: str) -> list[str]:
    values = OmegaConf.to_container(cfg[key]) if OmegaConf.is_list(cfg[key]) else cfg[key]
    if not isinstance(values, list) or not values or not all(isinstance(v, str) and v for v in values) \
            or len(set(values)) != len(values):
        raise CLIError(f"{key} must be a non-empty list of distinct names, got {values!r}")
    return values


def console_app(cfg: DictConfig) -> int:
    """See the module docstring."""
    import torch

    from robot_learn.cli.tasks import check_task
    from robot_learn.console import ConsoleServer, OperatorConsole, SessionSetup, StandInPolicy
    from robot_learn.console.server import LOCAL_HOSTS, bind_socket
    from robot_learn.data import EpisodeStore

    torch.set_num_threads(1)
    task = check_task(cfg.task.name)
    # Everything is checked before a store is opened or a port bound.
    sessions = setting(cfg, "sessions", int, minimum=1)
    episodes = setting(cfg, "episodes", int, minimum=1, optional=True)
    host = setting(cfg, "host", str)
    port = setting(cfg, "port", int, minimum=0)
    if port > 65535:
        raise CLIError(f"port must be <= 65535, got {port}")
    rate_hz = setting(cfg, "rate_hz", float, minimum=1e-3)
    seed = setting(cfg, "seed", int, minimum=0)
    round_index = setting(cfg, "round", int, minimum=0)
    policy_dir = setting(cfg, "policy_dir", str, optional=True)
    freeze_fraction = setting(cfg, "stand_in.freeze_fraction", float, minimum=0.0)
    raw = OmegaConf.select(cfg, "stand_in.freeze_after")
    freeze_after = list(raw) if OmegaConf.is_list(raw) else [raw]
    try:
        StandInPolicy.check(freeze_fraction, freeze_after)
    except ValueError as err:
        raise CLIError(f"stand_in.{err}") from None
    operators, labels = _names(cfg, "operators"), _names(cfg, "labels")
    robot_overrides = {}
    if policy_dir is not None:
        from robot_learn.policies import load_policy

        robot_overrides = robot_settings_for_policy(cfg.robot, load_policy(policy_dir))  # a bad policy_dir fails now
    cameras = list(robot_overrides.get("cameras") or cfg.robot.get("cameras") or [])

    def make_policy(i: int) -> Any:
        if policy_dir is None:
            return lambda robot: StandInPolicy(robot, task, freeze_fraction, freeze_after, seed=seed + i)
        from robot_learn.loops import PolicyActor
        from robot_learn.policies import load_policy

        actor = PolicyActor(load_policy(policy_dir), seed=seed + i)
        return lambda robot: actor

    def hands() -> Any:
        # The simulated operator's budget caps a round's human time; here the console decides.
        extra = {"budget_s": None} if "budget_s" in cfg.operator else {}
        return instantiate_node(cfg.operator, "operator", **extra)

    # Built here so config mistakes fail before any store exists; each session connects
    # its robot on its own thread (a simulator's GL context belongs to the thread that made it).
    robots = [instantiate_node(cfg.robot, "robot", **robot_overrides) for _ in range(sessions)]
    policies = [make_policy(i) for i in range(sessions)]
    hands_of = [hands() for _ in range(sessions)]
    sock = bind_socket(host, port)  # a taken port or unknown host fails before any store is made
    try:
        run_dir = Path(str(cfg.run_dir))
        run_dir.mkdir(parents=True, exist_ok=True)
        setups = {f"sim-{i}": SessionSetup(
            make_robot=lambda robot=robots[i]: robot, make_policy=policies[i], hands=hands_of[i],
            store=EpisodeStore.open_or_create(run_dir / f"sim-{i}.zarr"), task=task, rate_hz=rate_hz,
            max_steps=int(cfg.task.max_steps), seed=seed + 1000 * i, round_index=round_index,
            policy_id=policy_dir or "stand-in", episodes=episodes, camera=cameras[0] if cameras else None,
            log_path=run_dir / f"sim-{i}.sessions.jsonl") for i in range(sessions)}
        console = OperatorConsole(setups, operators, labels)
        server = ConsoleServer(console, host, sock=sock)
        console.start()
        try:
            driver = f"policy {policy_dir}" if policy_dir else "the scripted stand-in policy"
            print(f"robot-learn console: {sessions} session(s) of '{task}' driven by {driver}, recording to "
                  f"{run_dir}/sim-*.zarr")
            if host not in LOCAL_HOSTS:
                print(f"WARNING: bound to {host}, reachable from the network; only the token guards it")
            print(f"open {server.url}", flush=True)
            server.run()
        finally:
            console.stop()
    finally:
        sock.close()
    for sid, s in console.sessions.items():
        print(f"{sid}: {len(s.summaries)} episode(s), {s.operator.takeovers} takeover(s), "
              f"{s.operator.human_steps} human step(s), state {s.state}")
    return 0


def main(argv: Sequence[str]) -> int:
    """Entry point for ``robot-learn console``."""
    return run_hydra_app(console_app, "console", argv, "robot-learn console")
