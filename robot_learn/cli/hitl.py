"""``robot-learn hitl robot=sim_so101 policy_dir=... operator=keyboard|simulated``: one HITL session.

The policy drives the robot; the operator takes over and hands back; every step is
recorded to ``store`` with who was in control and when (see
:mod:`robot_learn.loops.session`). Rerunning with the same store and
round resumes after the last committed episode.

``steer=point:x,y,z`` (or ``sketch:x,y,z/x,y,z/...``, ``correction:<action>/...``) steers
the policy toward what the operator asks with the ITPS sampler ``steer_sampler``
(``random``, ``post_hoc``, ``biased_init``, ``guided``, ``stochastic``); see
:mod:`robot_learn.loops.steering`. Commas in ``steer`` need no quoting here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from omegaconf import DictConfig

from robot_learn.cli.hydra_app import run_hydra_app
from robot_learn.cli.policy_dirs import robot_settings_for_policy
from robot_learn.cli.settings import setting
from robot_learn.cli.train import instantiate_node


def hitl_app(cfg: DictConfig) -> int:
    """See the module docstring."""
    import torch

    from robot_learn.cli.tasks import check_task
    from robot_learn.data import EpisodeStore
    from robot_learn.loops import HITLSession, PolicyActor
    from robot_learn.loops.session import check_policy_fits_robot
    from robot_learn.loops.steering import build_steering
    from robot_learn.policies.diffusion.itps import ITPS_SAMPLERS
    from robot_learn.policies import load_policy

    torch.set_num_threads(1)
    task = check_task(cfg.task.name)
    # Checked before the store is opened, so a bad value creates nothing.
    episodes = setting(cfg, "episodes", int, minimum=1)
    seed = setting(cfg, "seed", int, minimum=0)
    round_index = setting(cfg, "round", int, minimum=0)
    rate_hz = setting(cfg, "rate_hz", float, minimum=1e-3)
    steer = setting(cfg, "steer", str, optional=True)
    steer_sampler = setting(cfg, "steer_sampler", str, choices=ITPS_SAMPLERS)
    actor = PolicyActor(load_policy(cfg.policy_dir), seed=seed)
    robot = instantiate_node(cfg.robot, "robot", **robot_settings_for_policy(cfg.robot, actor.policy))
    check_policy_fits_robot(robot, actor)  # before the store is created
    if steer is not None:
        actor.steer(build_steering(steer, robot, actor.policy, steer_sampler))
    operator = instantiate_node(cfg.operator, "operator")
    store = EpisodeStore.open_or_create(cfg.store)
    robot.connect()
    try:
        session = HITLSession(robot, actor, operator, store,
                              task, rate_hz=rate_hz, max_steps=int(cfg.task.max_steps),
                              round_index=round_index, policy_id=str(cfg.policy_dir), realtime=bool(cfg.realtime),
                              log_path=Path(cfg.store).with_suffix(".sessions.jsonl"))
        for ep in session.run(episodes, seed=seed):
            print(f"episode {ep.index} (seed {ep.seed}): {ep.steps} steps, success {ep.success}, "
                  f"{ep.source}, human {ep.human_s:.1f} s, takeovers {ep.takeovers}"
                  + (f", steered {ep.steering}" if ep.steering else ""))
            if ep.paused:
                print(f"session PAUSED: {ep.reason}. The episode so far is kept (episode {ep.index}, operator marked "
                      f"'{ep.pause_mark.strip()}'); rerun to continue.")
                return 3
    finally:
        robot.disconnect()
    print(f"store: {cfg.store} ({store.num_episodes} episodes)")
    return 0


def quote_steer(argv: Sequence[str]) -> list[str]:
    """``steer=point:0.2,0.1,0.05`` as Hydra reads it whole: quoted, so its commas do not make
    a sweep over three values. Values already quoted, or holding a quote, pass unchanged."""
    out = []
    for arg in argv:
        key, sep, value = arg.partition("=")
        if (sep and key.lstrip("+") == "steer" and value not in ("", "null") and value[0] not in "'\""
                and "'" not in value):
            arg = f"{key}='{value}'"
        out.append(arg)
    return out


def main(argv: Sequence[str]) -> int:
    """Entry point for ``robot-learn hitl``."""
    return run_hydra_app(hitl_app, "hitl", quote_steer(argv), "robot-learn hitl")
