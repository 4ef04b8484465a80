"""``robot-learn fleet actors=N episodes=M [address=...]``: an SOP-style fleet on Ray.

Collects the demos over Ray if the demo store is missing, starts the writer, the weight
hub, the learner and ``actors`` robot actors (see :mod:`robot_learn.fleet.fleet`), runs
until the fleet has committed ``episodes`` episodes, stops the learner after a
checkpoint and prints episodes/s and learner samples/s; ``fleet.json`` in the run dir
holds the report. Rerunning in the same run dir resumes the learner from its checkpoint.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from robot_learn.cli.hydra_app import CLIError, run_hydra_app
from robot_learn.cli.settings import setting
from robot_learn.cli.train import instantiate_node, policy_name_for_config


def fleet_app(cfg: DictConfig) -> int:
    """See the module docstring."""
    import torch

    from robot_learn.cli.tasks import check_task, fit_policy_to_task
    from robot_learn.data import EpisodeStore
    from robot_learn.fleet import Fleet, start_ray
    from robot_learn.fleet.online_offline_sampler import ONLINE_DATA

    torch.set_num_threads(1)
    task = check_task(cfg.task.name)
    # Every setting is checked before Ray starts or anything is written.
    actors = setting(cfg, "actors", int, minimum=1)
    episodes = setting(cfg, "episodes", int, minimum=1)
    timeout_s = setting(cfg, "timeout_s", float, minimum=1)
    actor_cpus = setting(cfg, "actor_cpus", float, minimum=0)
    learner_cpus = setting(cfg, "learner_cpus", float, minimum=0)
    publish_every = setting(cfg, "publish_every", int, minimum=1)
    online_share = setting(cfg, "online_share", float, minimum=0)
    if online_share > 1:
        raise ValueError(f"online_share must be in [0, 1], got {online_share}")
    online_data = setting(cfg, "online_data", str)
    if online_data not in ONLINE_DATA:
        raise ValueError(f"online_data must be one of {', '.join(ONLINE_DATA)}, got {online_data!r}")
    eval_episodes = setting(cfg, "eval_episodes", int, minimum=0)
    num_cpus = setting(cfg, "num_cpus", int, minimum=1, optional=True)
    address = setting(cfg, "address", str, optional=True)
    rate_hz = setting(cfg, "rate_hz", float, minimum=1e-3)
    seed = setting(cfg, "seed", int, minimum=0)
    # Absolute: Ray's workers need not share this process's working directory.
    run_dir, store_path = Path(cfg.run_dir).resolve(), Path(cfg.store).resolve()
    train_cfg = instantiate_node(cfg.train, "train", out_dir=str(run_dir / "learner"))
    policy_config = fit_policy_to_task(instantiate_node(cfg.policy, "policy"), task)
    policy_name = policy_name_for_config(policy_config)
    policy_choice = f"policy={HydraConfig.get().runtime.choices.get('policy', '?')}"
    if getattr(policy_config, "frame_encoder", None):
        raise CLIError(f"{policy_choice} trains on its pretrained frame encoder's cached features, which the fleet's "
                       f"learner does not build (its stores grow while it trains); use a policy that encodes its "
                       f"cameras itself (diffusion_image) or state, or train the pixel policy with robot-learn train "
                       f"and improve it with robot-learn improve loop=hgdagger")
    actor_policy = None
    if cfg.actor_policy_dir:
        from robot_learn.fleet import PolicySpaces, check_registration
        from robot_learn.fleet.policy_transfer import policy_to_files
        from robot_learn.policies import get_policy_class, load_policy

        loaded = load_policy(cfg.actor_policy_dir)
        # The fleet checks it again at registration; here it is refused before anything starts.
        learner_spaces = PolicySpaces.of(get_policy_class(policy_name)(policy_config))
        check_registration("robot-0", PolicySpaces.of(loaded), learner_spaces, str(cfg.actor_policy_dir),
                           policy_choice)
        actor_policy = policy_to_files(loaded)
    robot = OmegaConf.to_container(cfg.robot, resolve=True)
    operator = OmegaConf.to_container(cfg.operator, resolve=True)

    start_ray(address, num_cpus=num_cpus)
    demo_path = Path(cfg.data.path).resolve()
    if not demo_path.exists():
        from robot_learn.envs.demos import staged_store
        from robot_learn.fleet.parallel_jobs import collect_demos_on_ray

        with staged_store(demo_path) as staging:
            summary = collect_demos_on_ray(task, int(cfg.data.episodes), staging, actors, noise=float(cfg.data.noise),
                                           seed=int(cfg.data.seed), cameras=list(cfg.data.cameras or []),
                                           image_size=int(cfg.data.image_size), max_steps=int(cfg.task.max_steps),
                                           num_cpus=actor_cpus)
        print(f"demos: {summary.successes}/{summary.attempted} succeeded, {summary.stored} stored in {demo_path}")
    fleet = Fleet(store_path, {"policy_config": policy_config, "offline_path": str(demo_path), "tasks": [task],
                              "train": train_cfg, "publish_every": publish_every, "online_share": online_share,
                              "online_data": online_data,
                              "run_name": str(cfg.run_dir)}, learner_cpus=learner_cpus)
    fleet.start()
    try:
        fleet.add_actors([{"name": f"robot-{i}", "task": task, "robot": robot, "operator": operator,
                           "max_steps": int(cfg.task.max_steps), "rate_hz": rate_hz, "policy_files": actor_policy,
                           "policy_name": str(cfg.actor_policy_dir or ""), "seed": seed + i * 1_000_000,
                           "num_cpus": actor_cpus} for i in range(actors)])
        first = fleet.learner_progress() or {"step": 0}
        report = fleet.run(episodes, timeout_s=timeout_s)
        wall_s = report.wall_s
    finally:
        report = fleet.shutdown()
    samples = (report.learner_steps - first["step"]) * train_cfg.batch_size
    print(f"{len(report.episodes)} episodes from {actors} actors in {wall_s:.1f} s: "
          f"{len(report.episodes) / wall_s:.3f} episodes/s; learner {report.learner_steps} steps, "
          f"{samples / wall_s:.1f} samples/s; restarts: actors {sum(report.actor_restarts.values())}, "
          f"learner {report.learner_restarts}")
    result = {"actors": actors, "episodes_per_s": len(report.episodes) / wall_s,
              "learner_samples_per_s": samples / wall_s, **report.to_dict()}
    if eval_episodes:
        from robot_learn.fleet.parallel_jobs import evaluate_on_ray
        from robot_learn.policies import load_policy
        from robot_learn.training import find_latest_checkpoint

        policy = load_policy(Path(find_latest_checkpoint(train_cfg.out_dir)) / "ema")
        evaluation = evaluate_on_ray(policy, task, eval_episodes, actors, max_steps=int(cfg.task.max_steps),
                                     num_cpus=actor_cpus)
        result["eval"] = evaluation.to_dict()
        print(f"eval: success {evaluation.success_rate:.0%} over {eval_episodes} held-out episodes")
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "fleet.json").write_text(json.dumps(result, indent=2, default=str))
    print(f"store: {store_path} ({EpisodeStore.open(store_path).num_episodes} episodes); report: {run_dir / 'fleet.json'}")
    return 0


def main(argv: Sequence[str]) -> int:
    """Entry point for ``robot-learn fleet``."""
    return run_hydra_app(fleet_app, "fleet", argv, "robot-learn fleet")
