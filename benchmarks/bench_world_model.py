"""Imagined frames per second of the world model against MuJoCo step + render frames
per second at the same resolution, measured side by side in one run; plus the
training step time of the same model.

    OMP_NUM_THREADS=1 nice -n 19 .venv/bin/python benchmarks/bench_world_model.py --steps 100

The world model is the default preset (configs/world_model/residual.yaml) with
untrained weights, or --checkpoint: its cost does not depend on the weights.
MuJoCo runs bin_place with the model's cameras (a frame of the model is one image of
each) at its image size, stepping with the scripted expert's actions.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch
import yaml

from robot_learn.envs import make_env, make_expert
from robot_learn.world_models import VideoWorldModel, WorldModelConfig, load_world_model
from robot_learn.world_models.imagination import Imagination

PRESET = Path(__file__).resolve().parents[1] / "configs" / "world_model" / "residual.yaml"


def mujoco_frames_per_s(task: str, cameras: tuple[str, ...], size: int, steps: int) -> float:
    env = make_env(task, cameras=cameras, image_size=size)
    expert = make_expert(task, noise=0.0, seed=0)
    obs, _ = env.reset(seed=0)
    expert.reset(env)
    t0, done = time.perf_counter(), 0
    while done < steps:
        obs, _, terminated, truncated, _ = env.step(expert.act(obs, env))
        done += 1
        if terminated or truncated:
            obs, _ = env.reset(seed=done)
            expert.reset(env)
    rate = steps / (time.perf_counter() - t0)
    env.close()
    return rate


@torch.no_grad()
def imagined_frames_per_s(model: VideoWorldModel, batch: int, steps: int) -> float:
    c = model.config
    frames = torch.randint(0, 255, (batch, c.history, c.image_size, c.image_size, 3 * len(c.cameras)),
                           dtype=torch.uint8)
    imagination = Imagination(model, frames, torch.zeros(batch, c.history, c.state_dim))
    action = np.zeros((batch, c.action_dim), np.float32)
    imagination.step(action)  # warm-up
    t0 = time.perf_counter()
    for _ in range(steps):
        imagination.step(action)
    return batch * steps / (time.perf_counter() - t0)


def train_step_s(model: VideoWorldModel, batch: int, steps: int) -> float:
    c = model.config
    shape = (batch, c.history + 1, c.image_size, c.image_size, 3)
    data = {"obs": {"images": {cam: torch.randint(0, 255, shape, dtype=torch.uint8) for cam in c.cameras},
                    "state": torch.randn(batch, c.history + 1, c.state_dim)},
            "action": torch.randn(batch, c.history, c.action_dim), "t": torch.ones(batch, dtype=torch.long)}
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for i in range(steps + 1):
        if i == 1:
            t0 = time.perf_counter()
        loss = model.compute_loss(data)["loss"]
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    return (time.perf_counter() - t0) / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default=None, help="a world-model dir; default: the untrained preset")
    parser.add_argument("--steps", type=int, default=100, help="frames per measurement")
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 16], help="imagined rollouts stepped together")
    parser.add_argument("--train-batch", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.checkpoint:
        model = load_world_model(args.checkpoint)
    else:
        model = VideoWorldModel(WorldModelConfig(**yaml.safe_load(PRESET.read_text()))).eval()
    c = model.config
    params = sum(p.numel() for p in model.parameters())
    print(f"config: task {c.task}, cameras {list(c.cameras)} at {c.image_size} px, head {c.head}, "
          f"space_to_depth {c.space_to_depth}, channels {list(c.block_out_channels)}, {params / 1e6:.2f} M params, "
          f"torch threads {args.threads}, {args.steps} frames per measurement")
    sim = mujoco_frames_per_s(c.task, c.cameras, c.image_size, args.steps)
    print(f"MuJoCo step + render ({c.task}, 1 env): {sim:.1f} frames/s")
    for batch in args.batches:
        rate = imagined_frames_per_s(model, batch, max(1, args.steps // batch))
        print(f"world model, {batch} rollouts together: {rate:.1f} imagined frames/s "
              f"({rate / sim:.2f}x MuJoCo)")
    step = train_step_s(model, args.train_batch, 10)
    print(f"training step, batch {args.train_batch}: {step:.2f} s")


if __name__ == "__main__":
    main()
