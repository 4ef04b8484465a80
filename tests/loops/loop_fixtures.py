"""A tiny real improvement loop: stack demos, a 2-step base policy, the simulated operator."""

from __future__ import annotations

from pathlib import Path

import torch

from robot_learn.data import EpisodeStore, WindowSampler
from robot_learn.envs import make_sim_robot
from robot_learn.envs.demos import collect_demos
from robot_learn.loops.operators import SimulatedOperator
from robot_learn.loops.round import LoopContext
from robot_learn.policies import DiffusionConfig
from robot_learn.training import TrainConfig, Trainer, build_policy_for_view

TASK, MAX_STEPS = "stack", 40


def tiny_config() -> DiffusionConfig:
    return DiffusionConfig(action_dim=5, state_dims={"state": 10, "env_state": 14}, obs_horizon=2, action_horizon=8,
                           execute_horizon=4, state_hidden_dims=[16], state_feature_dim=8, down_dims=[16, 32],
                           timestep_embed_dim=16, num_inference_steps=3)


def train_config(out_dir: Path, steps: int = 2) -> TrainConfig:
    return TrainConfig(steps=steps, batch_size=8, warmup_steps=1, ckpt_every=0, log_every=100, device="cpu",
                       num_threads=1, progress_bar=False, out_dir=str(out_dir))


def make_base(root: Path) -> tuple[object, Path]:
    """Demos (3 expert episodes) and a base policy trained for 2 steps on them."""
    torch.set_num_threads(1)
    collect_demos(TASK, 3, root / "demos.zarr", cameras=(), max_steps=MAX_STEPS, progress_bar=False)
    demos = EpisodeStore.open(root / "demos.zarr").view(success=True)
    assert demos.num_episodes, "no expert demo succeeded within MAX_STEPS"
    policy = build_policy_for_view(tiny_config(), demos)
    sampler = WindowSampler(demos, obs_keys=policy.training_obs_keys, obs_horizon=2, action_horizon=8, batch_size=8)
    base_dir = Path(Trainer(policy, sampler, train_config(root / "base")).fit()["final_policy_dir"])
    return demos, base_dir


def make_context(run_dir: Path, demos: object, base_dir: Path) -> LoopContext:
    operator = SimulatedOperator(TASK, reaction_steps=0, budget_s=2.0, rate_hz=10.0)
    operator.rule.stall_steps = 3  # a 2-step policy stalls at once: the operator takes over

    def make_robot():
        robot = make_sim_robot(TASK, cameras=(), max_steps=MAX_STEPS)
        robot.connect()
        return robot

    def make_operator(r):
        operator.new_round()
        return operator

    return LoopContext(run_dir, TASK, demos, make_robot, make_operator, train_config(run_dir),
                       max_steps=MAX_STEPS, base_policy_dir=base_dir)
