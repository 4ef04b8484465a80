"""``robot-learn improve loop=METHOD rounds=N``: improvement rounds (Hydra app, config improve.yaml).

1. demos (collected if missing; by the expert the method names: loop=reversed records the easy
   task's, to rest, and trains on them reversed) and a base policy (``base_policy`` or a short,
   weak training run);
2. round 0: evaluate the base policy;
3. rounds 1..N of the method (``configs/loop/<method>.yaml``, :mod:`robot_learn.loops.methods`),
   collecting from the config's ``sources``, resumable;
4. rounds.json / rounds.md / success plots in the run dir.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Sequence

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from robot_learn.cli.errors import CLIError
from robot_learn.cli.hydra_app import demo_store_path, run_hydra_app
from robot_learn.cli.settings import env_conditions, sampler_memory
from robot_learn.cli.train import check_store_fits_policy, ensure_demos, instantiate_node, policy_name_for_config
from robot_learn.training.frame_features import prepare_frame_features


def train_base_policy(cfg: DictConfig, demos: Any, run_dir: Path, train_cfg: Any, demo_path: Any,
                      memory: dict[str, Any]) -> Path:
    """Train the base policy on the demos (``base_train_steps``) unless ``base_policy`` is set;
    ``demo_path``: the expert's store they come from (named when they do not fit the policy);
    ``memory``: the sampler's memory settings (:func:`sampler_memory`)."""
    from robot_learn.data import WindowSampler
    from robot_learn.training import Trainer, build_policy_for_view

    if cfg.base_policy:
        return Path(cfg.base_policy)
    policy_config = instantiate_node(cfg.policy, "policy")
    check_store_fits_policy(demos, policy_config, str(demo_path))
    try:  # pixel presets: the frame encoder (pretrained or reused) and its features of the demos
        policy_config, encoder, derived = prepare_frame_features(policy_config, demos, cfg.task.name,
                                                                 str(demo_path), device=str(cfg.train.device))
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    policy = build_policy_for_view(policy_config, demos, derived, name=policy_name_for_config(policy_config))
    if encoder is not None:
        policy.frame_encoder.load_state_dict(encoder.state_dict())
    sampler = WindowSampler(demos, obs_keys=policy.training_obs_keys, obs_horizon=policy.obs_horizon,
                            action_horizon=policy.action_horizon, batch_size=train_cfg.batch_size,
                            seed=int(cfg.data.sampler_seed), derived=derived, **memory)
    base_cfg = dataclasses.replace(train_cfg, out_dir=str(run_dir / "base"), steps=int(cfg.base_train_steps))
    print(f"training the base policy for {base_cfg.steps} steps on {demos.num_episodes} demos")
    return Path(Trainer(policy, sampler, base_cfg).fit()["final_policy_dir"])


def base_demos(cfg: DictConfig, task: str, method: Any, loop_cfg: Any, run_dir: Path) -> tuple[Any, Any]:
    """(the base policy's data, the expert demos it comes from): the demos of the expert the
    method's recipe names, at ``data.path`` (for another expert's or to-rest demos, that
    task's own default store, named for them, unless data.path is set), made into base data
    by the method."""
    recipe = method.demo_recipe(loop_cfg, task)
    path = cfg.data.path
    cams, size, spread = cfg.data.cameras, cfg.data.image_size, cfg.data.start_spread
    if (recipe.task != task or recipe.to_rest) and path == demo_store_path(task, cams, size, spread):
        path = demo_store_path(recipe.task, cams, size, spread)
        if recipe.to_rest:
            path = path.removesuffix(".zarr") + "_to_rest.zarr"
        if recipe.drop_spot != "beside":
            path = path.removesuffix(".zarr") + f"_drop_{recipe.drop_spot}.zarr"
    expert_demos = ensure_demos(cfg, recipe.task, path, to_rest=recipe.to_rest, drop_spot=recipe.drop_spot)
    demos = method.base_data(loop_cfg, task, expert_demos, run_dir)
    if demos is not expert_demos:
        print(f"      base data: {demos.num_episodes} {task} episodes from {expert_demos.num_episodes} "
              f"{recipe.task} demos ({loop_cfg.method})")
    return demos, expert_demos


def improve_app(cfg: DictConfig) -> int:
    """See the module docstring."""
    import json

    import torch

    from robot_learn.cli.tasks import check_task
    from robot_learn.evaluation import evaluate
    from robot_learn.loops.methods import make_method, method_class
    from robot_learn.loops.round import LoopContext
    from robot_learn.loops.rounds import run_rounds
    from robot_learn.policies import load_policy

    task = check_task(cfg.task.name)
    conditions = env_conditions(cfg)  # where the rounds collect and evaluate
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    loop_cfg = instantiate_node(cfg.loop, "loop")
    train_cfg = instantiate_node(cfg.train, "train", out_dir=str(run_dir))
    memory = sampler_memory(cfg)  # data.cache_gb, data.windows_per_frame: checked before any work
    if train_cfg.num_threads:
        torch.set_num_threads(train_cfg.num_threads)
    sources = ", ".join(f"{k} {v:g}" for k, v in loop_cfg.sources.items())
    print(f"run dir: {run_dir}\nloop: {loop_cfg.method}, {cfg.rounds} rounds of {loop_cfg.episodes} episodes "
          f"from {sources}" + ("" if conditions.is_default else f", under {conditions.describe()}"))

    demos, expert_demos = base_demos(cfg, task, method_class(loop_cfg.method), loop_cfg, run_dir)
    base_dir = train_base_policy(cfg, demos, run_dir, train_cfg, expert_demos.store.path, memory)
    base_numbers = None
    base_report = run_dir / "round_00" / "report.json"
    if cfg.base_eval:
        if base_report.exists():
            base_numbers = json.loads(base_report.read_text())
        else:
            s = evaluate(load_policy(base_dir), task, episodes=loop_cfg.eval_episodes, seed=loop_cfg.eval_seed,
                         workers=loop_cfg.eval_workers, videos=0, max_steps=cfg.task.max_steps,
                         vectorization="sync", conditions=conditions).summary
            base_numbers = {"round": 0, "success_rate": s.success_rate, "ci_low": s.ci_low, "ci_high": s.ci_high,
                            "eval_episodes": s.episodes, "eval_successes": s.successes, "human_seconds": 0.0,
                            "policy_dir": str(base_dir)}
            from robot_learn.loops.rounds import write_round_report

            write_round_report(base_report, base_numbers)
        print(f"round 0 (base): success {base_numbers['success_rate']:.1%}")

    def make_robot() -> Any:
        robot = instantiate_node(cfg.robot, "robot")
        robot.connect()
        return robot

    operator = instantiate_node(cfg.operator, "operator")

    def make_operator(r: int) -> Any:
        if hasattr(operator, "new_round"):
            operator.new_round()
        return operator

    ctx = LoopContext(run_dir=run_dir, task=task, demos=demos, make_robot=make_robot, make_operator=make_operator,
                      train_config=train_cfg, rate_hz=float(cfg.rate_hz), max_steps=int(cfg.task.max_steps),
                      base_policy_dir=base_dir, expert_demos=expert_demos, conditions=conditions,
                      sampler_memory=memory)
    method = make_method(ctx, loop_cfg)

    def one_round(r: int, policy_dir: Path):
        print(f"round {r}: {method.round_plan()}")
        new_dir, numbers = method.run_round(r, policy_dir)
        print(f"round {r}: success {numbers['success_rate']:.1%} [{numbers['ci_low']:.1%}, {numbers['ci_high']:.1%}], "
              f"human {numbers['human_seconds']:.1f} s, interventions/ep {numbers['interventions_per_episode']:.2f}")
        for note in numbers.get("notes", []):
            print(f"round {r}: {note}")
        return new_dir, numbers

    run_rounds(run_dir, int(cfg.rounds), base_dir, base_numbers, one_round)
    print(f"report: {run_dir / 'rounds.md'}")
    return 0


def main(argv: Sequence[str]) -> int:
    """Entry point for ``robot-learn improve``."""
    return run_hydra_app(improve_app, "improve", argv, "robot-learn improve")
