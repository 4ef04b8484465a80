"""Our diffusion policy against LeRobot's DiffusionPolicy at the same size, in one process.

Runs inside ``.venv-lerobot`` (built by ``make test``), so both use one torch:

    .venv-lerobot/bin/python benchmarks/bench_vs_lerobot.py policy [--steps 20] [--runs 30] [--threads 2]
    .venv-lerobot/bin/python benchmarks/bench_vs_lerobot.py levers [--steps 20] [--configs state image]
    .venv-lerobot/bin/python benchmarks/bench_vs_lerobot.py profile [--steps 10] [--configs state image]
    .venv-lerobot/bin/python benchmarks/bench_vs_lerobot.py loader [--store PATH] [--episodes 80]

``policy``: two configurations, each built by both projects at the same size.

- state: ``state`` (10) and ``env_state`` (14), two observation steps, a U-Net with down
  dims 64/128/256, kernel 5, timestep embedding 128, horizon 16, DDIM-10;
- image: ``state`` (10) and one 96 px camera cropped to 84, one observation step, the same
  U-Net, and a ResNet-18-wide encoder (64/128/256/512, two blocks per stage, GroupNorm,
  downsampling by 4 before the first stage, 32 spatial-softmax keypoints) in both.

It prints the parameters of each, the training step at batch 64 (ours: the real
``Trainer`` step with its sampler, fused AdamW, grad clipping, the LR schedule and EMA;
LeRobot's: its policy's ``forward`` on a ready batch, backward, grad clipping and its
optimizer preset, Adam) and the chunk latency at batch 1 (ours: ``predict_action_chunk``
from raw observations, DDIM-10 and the MIP head's two passes, eager and with
``compile_inference``, all with ``fast_inference``, the default; LeRobot's:
``generate_actions`` on a ready batch, DDIM-10, and for the image configuration also with
its encoder channels-last, as ``fast_inference`` runs ours). On a CPU with native bf16
(AVX512-BF16 or AMX) the compiled MIP-2 chunk also runs with ``compile_bf16`` and LeRobot's
DDIM-10 under bf16 autocast, and the training steps run under bf16 autocast in both projects: ours
with ``train.cpu_amp``, LeRobot's under the same ``torch.autocast`` its ``use_amp`` opens (its
train script's ``GradScaler`` is left out: bf16 needs no loss scaling, and ours has none). The
arms alternate rep by rep; ratios are medians of the per-rep ratios with 95% bootstrap
intervals.

``levers``: our training step plain, with ``torch.compile`` of the policy's forward,
(image) with the weights in channels-last memory format, and (native-bf16 CPUs) with
``train.cpu_amp``, interleaved.

``profile``: each project's fp32 training step under ``torch.profiler``, self CPU time per
step by operator, side by side (where the time goes, for the 1.3x goal).

``loader``: windows/s on the same episodes (one camera, windows of 2 frames + 16
actions, batch 64, one process): our ``WindowSampler`` cached, out of core with its
cache capped at a quarter of the arrays (``block_pool``), and with ``cache=False``;
LeRobot's ``LeRobotDataset`` + ``DataLoader`` on a PNG export of the same episodes.
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Callable

import numpy as np
import torch

try:
    from lerobot.configs.types import FeatureType, PolicyFeature
    from lerobot.policies.diffusion.configuration_diffusion import DiffusionConfig as LeRobotConfig
    from lerobot.policies.diffusion.modeling_diffusion import DiffusionPolicy as LeRobotPolicy
except ImportError as err:  # pragma: no cover - a user running it in the wrong venv
    sys.exit(f"bench_vs_lerobot.py: error: lerobot's policy code does not import ({err}); run it with "
             ".venv-lerobot/bin/python (built by `make .venv-lerobot/.installed`)")

from bench_inference import observation  # noqa: E402  (benchmarks/ is on sys.path when run as a script)
from bench_train import build_store, paired_ratio_text  # noqa: E402
from robot_learn.data import WindowSampler  # noqa: E402
from robot_learn.policies import diffusion_image_config, diffusion_state_config, make_policy  # noqa: E402
from robot_learn.training import Trainer, TrainConfig, build_policy_for_view  # noqa: E402
from robot_learn.training.precision import cpu_runs_bf16  # noqa: E402

UNET = dict(down_dims=[64, 128, 256], kernel_size=5, timestep_embed_dim=128, action_horizon=16,
            num_train_timesteps=100, inference_scheduler="ddim", num_inference_steps=10)
RESNET18 = dict(vision_channels=[64, 128, 256, 512], vision_blocks_per_stage=2, vision_stem_stride=4,
                num_keypoints=32, vision_feature_dim=64, crop_size=84, image_size=96)


def ours(name: str):
    if name == "state":
        return diffusion_state_config(obs_horizon=2, **UNET), ("state", "env_state")
    config = diffusion_image_config(camera_names=["front"], text_encoder="none", obs_horizon=1, **UNET, **RESNET18)
    return config, ("state", "images/front")


def theirs(name: str) -> LeRobotConfig:
    inputs = {"observation.state": PolicyFeature(FeatureType.STATE, (10,))}
    if name == "state":
        inputs["observation.environment_state"] = PolicyFeature(FeatureType.ENV, (14,))
        extra = dict(n_obs_steps=2)
    else:
        inputs["observation.images.front"] = PolicyFeature(FeatureType.VISUAL, (3, 96, 96))
        extra = dict(n_obs_steps=1, vision_backbone="resnet18", use_group_norm=True, crop_shape=(84, 84),
                     pretrained_backbone_weights=None, spatial_softmax_num_keypoints=32)
    return LeRobotConfig(input_features=inputs, output_features={"action": PolicyFeature(FeatureType.ACTION, (5,))},
                         down_dims=(64, 128, 256), kernel_size=5, diffusion_step_embed_dim=128, horizon=16,
                         n_action_steps=8, noise_scheduler_type="DDIM", num_train_timesteps=100,
                         num_inference_steps=10, device="cpu", **extra)


def their_batch(config: LeRobotConfig, batch: int, train: bool) -> dict[str, torch.Tensor]:
    steps = config.n_obs_steps
    out = {"observation.state": torch.randn(batch, steps, 10)}
    if config.env_state_feature:
        out["observation.environment_state"] = torch.randn(batch, steps, 14)
    if config.image_features:
        images = torch.rand(batch, steps, 1, 3, 96, 96)
        if train:
            out["observation.images.front"] = images[:, :, 0]
        else:
            out["observation.images"] = images
    if train:
        out["action"] = torch.randn(batch, config.horizon, 5)
        out["action_is_pad"] = torch.zeros(batch, config.horizon, dtype=torch.bool)
    return out


def paired(times: dict[str, list[float]], runs: int, warmup: int, arms: dict[str, Callable[[], None]]) -> None:
    names = list(arms)
    for i in range(warmup + runs):
        for name in names[i % len(names):] + names[:i % len(names)]:
            t0 = time.perf_counter()
            arms[name]()
            if i >= warmup:
                times[name].append(time.perf_counter() - t0)


def ratio_text(a: list[float], b: list[float]) -> str:
    return paired_ratio_text(a, b, np.random.default_rng(0))


def their_trainer(name: str, bf16: bool = False) -> tuple[LeRobotPolicy, Callable[[], None]]:
    """LeRobot's policy in training mode and one training step of it on a ready batch of 64."""
    lr_config = theirs(name)
    policy = LeRobotPolicy(lr_config).train()
    preset = lr_config.get_optimizer_preset()
    optimizer = preset.build(policy.get_optim_params())
    train_batch = their_batch(lr_config, 64, train=True)

    def step() -> None:
        # LeRobot's own mixed precision (its train script's use_amp) is this autocast on the CPU
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=bf16):
            loss, _ = policy.forward(train_batch)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.parameters(), preset.grad_clip_norm)
        optimizer.step()
        optimizer.zero_grad()
    return policy, step


def bench_policy(name: str, args, tmp: Path) -> None:
    config, _ = ours(name)
    trainer = our_trainer(name, args, tmp, "ours")
    mine = trainer.policy
    lr_config = theirs(name)
    other, their_step = their_trainer(name)

    count = lambda m: sum(p.numel() for p in m.parameters()) / 1e6  # noqa: E731
    print(f"\n[{name}] parameters: ours {count(mine):.2f} M, LeRobot {count(other):.2f} M")
    steps = {"ours": trainer._train_step, "lerobot": their_step}
    if cpu_runs_bf16():  # both projects' bf16 autocast, where the CPU runs bf16 natively
        steps["ours bf16"] = our_trainer(name, args, tmp, "ours_bf16", cpu_amp=True)._train_step
        steps["lerobot bf16"] = their_trainer(name, bf16=True)[1]
    train_times: dict[str, list[float]] = {arm: [] for arm in steps}
    paired(train_times, args.steps, 3, steps)

    eval_ours = make_policy("diffusion", config, None).eval()  # fast_inference: matmul U-Net, channels-last encoder
    eval_ours.load_state_dict(mine.state_dict())
    mips = {}
    mip_arms = [("ours MIP-2", False, False), ("ours MIP-2 compiled", True, False)]
    if cpu_runs_bf16():  # compile_bf16: the compiled calls in bf16, weights frozen in
        mip_arms.append(("ours MIP-2 compiled bf16", True, True))
    for arm, compiled, bf16 in mip_arms:
        mips[arm] = make_policy("diffusion", config.with_changes(head="mip", compile_inference=compiled,
                                                                 compile_bf16=bf16), None).eval()
        mips[arm].load_state_dict(mine.state_dict())
    other.eval()
    obs, their_obs = observation(config), their_batch(lr_config, 1, train=False)
    generator = torch.Generator().manual_seed(0)
    arms = {"ours DDIM-10": lambda: eval_ours.predict_action_chunk(obs, generator=generator),
            **{arm: (lambda p=p: p.predict_action_chunk(obs, generator=generator)) for arm, p in mips.items()},
            "lerobot DDIM-10": lambda: other.diffusion.generate_actions(their_obs)}
    if lr_config.image_features:  # LeRobot's encoder given the same channels-last layout as ours
        their_cl = channels_last_copy(other)
        arms["lerobot DDIM-10 channels-last"] = lambda: their_cl.diffusion.generate_actions(their_obs)
    if "ours MIP-2 compiled bf16" in mips:  # LeRobot under the same bf16 autocast, for equal precision

        def their_bf16_chunk() -> None:
            with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
                other.diffusion.generate_actions(their_obs)
        arms["lerobot DDIM-10 bf16"] = their_bf16_chunk
    with torch.no_grad():
        for arm in [a for a in mips if "compiled" in a]:
            t0 = time.perf_counter()
            mips[arm].predict_action_chunk(obs, generator=generator)
            print(f"  ({arm}: the first chunk compiled in {time.perf_counter() - t0:.0f} s)")
        chunk_times: dict[str, list[float]] = {arm: [] for arm in arms}
        paired(chunk_times, args.runs, 5, arms)

    ms = lambda t: 1000 * statistics.median(t)  # noqa: E731
    print(f"  training step, batch 64 ({args.steps} steps each, interleaved)")
    print(f"    ours {ms(train_times['ours']):.1f} ms, LeRobot {ms(train_times['lerobot']):.1f} ms; "
          f"LeRobot / ours (throughput ratio) {ratio_text(train_times['lerobot'], train_times['ours'])}")
    if "ours bf16" in train_times:
        bf16, their_bf16 = train_times["ours bf16"], train_times["lerobot bf16"]
        print(f"    bf16 autocast: ours {ms(bf16):.1f} ms, LeRobot {ms(their_bf16):.1f} ms; throughput ratios: "
              f"ours bf16 over LeRobot fp32 (its default) {ratio_text(train_times['lerobot'], bf16)}, "
              f"ours bf16 over LeRobot bf16 {ratio_text(their_bf16, bf16)}")
    print(f"  chunk latency, batch 1 ({args.runs} chunks each, interleaved)")
    base = chunk_times["lerobot DDIM-10"]
    for arm, times in chunk_times.items():
        print(f"    {arm:<30} p50 {ms(times):7.1f} ms   / LeRobot DDIM-10 {ratio_text(times, base)}")


def channels_last_copy(policy: LeRobotPolicy) -> LeRobotPolicy:
    """A copy of LeRobot's policy whose image encoder keeps weights and inputs channels-last."""
    import copy

    other = copy.deepcopy(policy).eval()
    encoder = other.diffusion.rgb_encoder
    encoder.to(memory_format=torch.channels_last)
    encoder.register_forward_pre_hook(
        lambda _module, inputs: (inputs[0].contiguous(memory_format=torch.channels_last), *inputs[1:]))
    return other


def our_trainer(name: str, args, tmp: Path, label: str, cpu_amp: bool = False) -> Trainer:
    config, obs_keys = ours(name)
    store = build_store(tmp / f"{name}_{label}.zarr", 40, 100, ("front",) if name == "image" else ())
    torch.manual_seed(0)
    policy = build_policy_for_view(config, store.view())
    sampler = WindowSampler(store, obs_keys=obs_keys, obs_horizon=config.obs_horizon,
                            action_horizon=config.action_horizon, batch_size=64, seed=0)
    return Trainer(policy, sampler, TrainConfig(steps=10**6, batch_size=64, warmup_steps=10, progress_bar=False,
                                                out_dir=str(tmp / f"{name}_{label}"), device="cpu",
                                                num_threads=args.threads, cpu_amp=cpu_amp))


def bench_levers(name: str, args, tmp: Path) -> None:
    """Our training step with each CPU lever against the plain step, interleaved."""
    trainers = {"plain": our_trainer(name, args, tmp, "plain"), "torch.compile": our_trainer(name, args, tmp, "compiled")}
    trainers["torch.compile"].model = torch.compile(trainers["torch.compile"].model)
    if name == "image":
        trainers["channels-last"] = our_trainer(name, args, tmp, "channels_last")
        trainers["channels-last"].policy.to(memory_format=torch.channels_last)
    if cpu_runs_bf16():
        trainers["cpu_amp (bf16)"] = our_trainer(name, args, tmp, "bf16", cpu_amp=True)
    for label, trainer in trainers.items():
        t0 = time.perf_counter()
        trainer._train_step()  # compiles
        print(f"[{name}] {label}: first step {time.perf_counter() - t0:.1f} s")
    times: dict[str, list[float]] = {label: [] for label in trainers}
    paired(times, args.steps, 3, {label: t._train_step for label, t in trainers.items()})
    for label, values in times.items():
        print(f"  {label:<16} step p50 {1000 * statistics.median(values):7.1f} ms   / plain "
              f"{ratio_text(values, times['plain'])}")


def bench_profile(name: str, args, tmp: Path) -> None:
    """Where each project's fp32 training step spends its time: torch.profiler over ``--steps``
    steps of each, after 3 unmeasured ones; per operator, milliseconds per step, side by side."""
    from torch.profiler import profile

    steps = {"ours": our_trainer(name, args, tmp, "profile")._train_step, "lerobot": their_trainer(name)[1]}
    per_step: dict[str, dict[str, float]] = {}
    for arm, step in steps.items():
        for _ in range(3):
            step()
        with profile() as prof:
            for _ in range(args.steps):
                step()
        per_step[arm] = {e.key: e.self_cpu_time_total / 1000.0 / args.steps for e in prof.key_averages()}
    ours_ms, theirs_ms = per_step["ours"], per_step["lerobot"]
    print(f"\n[{name}] training step, batch 64, fp32, self CPU ms per step under torch.profiler ({args.steps} steps each)")
    print(f"  {'operator':<44}{'ours':>9}{'LeRobot':>9}")
    top = sorted(set(ours_ms) | set(theirs_ms), key=lambda k: -max(ours_ms.get(k, 0.0), theirs_ms.get(k, 0.0)))[:15]
    for key in top:
        print(f"  {key[:43]:<44}{ours_ms.get(key, 0.0):9.2f}{theirs_ms.get(key, 0.0):9.2f}")
    print(f"  {'all':<44}{sum(ours_ms.values()):9.2f}{sum(theirs_ms.values()):9.2f}")


def bench_loader(args, tmp: Path) -> None:
    import datasets
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    from robot_learn.data import EpisodeStore
    from robot_learn.interop.lerobot_export import export_lerobot

    source = EpisodeStore.open(args.store, mode="r")
    if f"images/{args.camera}" not in source.keys:
        sys.exit(f"bench_vs_lerobot.py: error: store {args.store} has no camera {args.camera!r}")
    n = min(args.episodes, source.num_episodes)
    path = tmp / "episodes.zarr"
    store = EpisodeStore.create(path)
    for index in range(n):
        episode = source.episode(index)
        steps = {k: episode["steps"][k] for k in ("state", "action", f"images/{args.camera}")}
        store.append_episode(steps, episode["meta"])
    store.close()
    store = EpisodeStore.open(path, mode="r")
    datasets.disable_progress_bars()
    logging.getLogger().setLevel(logging.ERROR)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        export_lerobot(path, tmp / "lerobot", repo_id="bench/episodes", use_videos=False)
    print(f"\n[loader] {n} episodes, {store.num_frames} frames, camera {args.camera} "
          f"(PNG export for LeRobot took {time.perf_counter() - t0:.0f} s)")
    keys = dict(obs_keys=("state", f"images/{args.camera}"), obs_horizon=2, action_horizon=16, batch_size=64)
    frame = 4 * (store.schema["state"]["shape"][0] + store.schema["action"]["shape"][0]) + int(
        np.prod(store.schema[f"images/{args.camera}"]["shape"]))
    capped = frame * store.num_frames // 4
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        samplers = {"ours, cached": WindowSampler(store, seed=0, **keys),
                    "ours, out of core (cache = 1/4 of the arrays)": WindowSampler(
                        store, seed=0, max_cache_bytes=capped, **keys),
                    "ours, cache=False": WindowSampler(store, seed=0, cache=False, **keys)}
    pool = samplers["ours, out of core (cache = 1/4 of the arrays)"].pool
    fps = store.fps if hasattr(store, "fps") else 10
    ds = LeRobotDataset("bench/episodes", root=tmp / "lerobot", delta_timestamps={
        f"observation.images.{args.camera}": [-1 / fps, 0.0], "observation.state": [-1 / fps, 0.0],
        "action": [t / fps for t in range(-1, 15)]})
    loader = iter(torch.utils.data.DataLoader(ds, batch_size=64, shuffle=True, num_workers=0))
    arms = {name: s.sample for name, s in samplers.items()}
    arms["LeRobotDataset + DataLoader (PNG)"] = lambda: next(loader)
    rates: dict[str, list[float]] = {name: [] for name in arms}
    for name, draw in arms.items():
        draw()  # first batch untimed (opens files, fills caches)
    for _ in range(args.repeats):
        for name, draw in arms.items():
            count, t0 = 0, time.perf_counter()
            while (elapsed := time.perf_counter() - t0) < args.seconds:
                draw()
                count += 1
            rates[name].append(64 * count / elapsed)
    base = statistics.median(rates["LeRobotDataset + DataLoader (PNG)"])
    print(f"  pool: {pool.num_slots} of {len(pool.blocks)} blocks held ({capped / 2**20:.1f} MiB cap), "
          f"{pool.loads} block loads")
    print(f"  {'loader':<48}{'windows/s':>12}{'vs LeRobot':>12}")
    for name, values in rates.items():
        rate = statistics.median(values)
        print(f"  {name:<48}{rate:12.0f}{rate / base:11.1f}x")


def commit() -> str:
    """The repository's commit, with "+dirty" when tracked files differ from it."""
    root = Path(__file__).resolve().parents[1]
    run = lambda *cmd: subprocess.run(["git", "-C", str(root), *cmd], capture_output=True, text=True).stdout.strip()  # noqa: E731
    head = run("rev-parse", "--short", "HEAD") or "unknown"
    return head + ("+dirty" if run("status", "--porcelain", "--untracked-files=no") else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=("policy", "levers", "profile", "loader", "all"))
    parser.add_argument("--steps", type=int, default=20, help="training steps per arm")
    parser.add_argument("--runs", type=int, default=30, help="chunks per arm")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--configs", nargs="+", default=["state", "image"], choices=("state", "image"))
    parser.add_argument("--store", default="data/bin_place_demos_front_wrist_96.zarr")
    parser.add_argument("--camera", default="front")
    parser.add_argument("--episodes", type=int, default=80)
    parser.add_argument("--seconds", type=float, default=3.0, help="per loader per repeat")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    torch.set_num_threads(args.threads)
    load = os.getloadavg()[0]
    print(f"torch {torch.__version__}, {platform.machine()}, {os.cpu_count()} cores (load {load:.1f}), "
          f"threads {torch.get_num_threads()}, native bf16 {cpu_runs_bf16()}, commit {commit()}")
    if args.part in ("loader", "all") and not Path(args.store).exists():
        sys.exit(f"bench_vs_lerobot.py: error: store {args.store} does not exist; collect it with "
                 "`robot-learn collect task=bin_place episodes=100 cameras=[front,wrist] out=...` "
                 "or pass --store")
    with tempfile.TemporaryDirectory() as tmp:
        if args.part in ("policy", "all"):
            for name in args.configs:
                bench_policy(name, args, Path(tmp))
        if args.part == "levers":
            for name in args.configs:
                bench_levers(name, args, Path(tmp))
        if args.part == "profile":
            for name in args.configs:
                bench_profile(name, args, Path(tmp))
        if args.part in ("loader", "all"):
            bench_loader(args, Path(tmp))


if __name__ == "__main__":
    main()
