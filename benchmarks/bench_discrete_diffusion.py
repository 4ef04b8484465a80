"""Discrete-diffusion VLA: decoding cost, multi-task training, and the language test.

Subcommands (all print their configuration first):

  decode    NFEs and p50 latency per chunk at batch 1 for each decoding mode of the
            discrete-diffusion policy, beside the continuous DiffusionPolicy with DDIM-10
            (same cameras, image size and instruction). Untrained weights unless
            --policy-dir is given (cost does not depend on the weights).
  train     Build (if missing) one demo store with every task of the suite and train
            the policy on all of it with the Trainer; saves <out>/final_policy.
            --policy diffusion trains the continuous baseline (matched parameter
            count) on the same store. --init DIR --tasks T fine-tunes a trained
            policy (its weights and normalisers) on task T's demos only (the
            multi-task RETAIN sweep's fine-tuned policy; see bench_merge.py);
            --replay-store S adds a share of S's demos to every batch (co-fine-tuning).
            --obs pixels --finetune-steps N then trains the frame encoder end to
            end on raw frames for N steps (policy in <out>/encoder_finetune).
            --members K trains an ensemble of K VLAs in one run, each on its own
            --batch-size windows of every step, decoded together (ensemble.py).
  language  Same initial scenes (forward tasks, held-out seeds) under the original
            instruction, the swapped instruction (reset option swap_roles: the other
            object is named) and a blank instruction; success is judged against the
            instruction given. Also runs each decoding mode given with --modes.

  python benchmarks/bench_discrete_diffusion.py decode
  python benchmarks/bench_discrete_diffusion.py train --steps 6000 --out outputs/dd_multitask
  python benchmarks/bench_discrete_diffusion.py language --policy-dir outputs/dd_multitask/final_policy
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np
import torch
from hydra.utils import instantiate
from omegaconf import OmegaConf

from robot_learn.envs import TASK_NAMES
from robot_learn.envs.base_env import OBJECT_SLOTS, OBJECTS_DIM
from robot_learn.policies import make_policy
from robot_learn.policies.diffusion import diffusion_image_config, diffusion_state_config
from robot_learn.policies.discrete_diffusion import (
    DECODINGS,
    DiscreteDiffusionEnsembleConfig,
    discrete_diffusion_image_config,
    discrete_diffusion_state_config,
)
from robot_learn.training.frame_features import prepare_frame_features

INSTRUCTION = "put the red cube on the blue cube"
FORWARD_TASKS = ("stack", "peg_insert", "bin_place")
CONFIGS = Path(__file__).resolve().parent.parent / "configs" / "policy"


def _fake_stats() -> dict:
    def entry(d: int) -> dict:
        return {k: np.full(d, v, np.float32) for k, v in (("min", -1), ("max", 1), ("q01", -1), ("q99", 1),
                                                           ("mean", 0), ("std", 1))}
    return {"state": entry(10), "env_state": entry(14), "action": entry(5)}


def _obs(image_size: int, obs_horizon: int) -> dict:
    rng = np.random.default_rng(0)
    return {"state": torch.from_numpy(rng.normal(size=(1, obs_horizon, 10)).astype(np.float32)),
            "env_state": torch.from_numpy(rng.normal(size=(1, obs_horizon, 14)).astype(np.float32)),
            "images": {c: torch.from_numpy(rng.integers(0, 255, (1, obs_horizon, image_size, image_size, 3), dtype=np.uint8))
                       for c in ("front", "wrist")},
            "instruction": [INSTRUCTION]}


def _time_chunks(policy, obs, repeats: int) -> list[float]:
    generator = torch.Generator().manual_seed(0)
    policy.predict_action_chunk(obs, generator=generator)  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        policy.predict_action_chunk(obs, generator=generator)
        times.append(time.perf_counter() - t0)
    return times


def bench_decode(args: argparse.Namespace) -> None:
    torch.set_num_threads(args.threads)
    if args.policy_dir:
        from robot_learn.policies import load_policy

        dd = load_policy(args.policy_dir)
    else:
        torch.manual_seed(0)
        dd = make_policy("discrete_diffusion", discrete_diffusion_image_config(), _fake_stats(), instructions=[INSTRUCTION])
    dd.eval()
    torch.manual_seed(0)
    if dd.config.camera_names:
        ddim = make_policy("diffusion", diffusion_image_config(), _fake_stats(), instructions=[INSTRUCTION]).eval()
    else:  # a state policy: compare with the continuous state baseline of the multi-task benchmark
        ddim = make_policy("diffusion", diffusion_state_config(down_dims=[48, 96], text_encoder="vocab"), _fake_stats(),
                           instructions=[INSTRUCTION]).eval()
    c = dd.config
    print(f"config: batch 1, torch threads {args.threads}, {args.repeats} chunks per row (p50 reported)")
    print(f"  discrete_diffusion: {sum(p.numel() for p in dd.parameters()) / 1e6:.2f} M params, backbone {c.backbone} "
          f"{c.num_layers}x{c.hidden_dim}, attention {c.attention}, cameras {c.camera_names} {c.image_size}px, "
          f"chunk {c.action_horizon}x{c.action_dim} = {c.num_action_tokens} tokens, {c.num_bins} bins, K={c.decoding_rounds}")
    print(f"  diffusion (DDIM-10): {sum(p.numel() for p in ddim.parameters()) / 1e6:.2f} M params, U-Net "
          f"{ddim.config.down_dims}, obs_horizon {ddim.obs_horizon}, chunk {ddim.action_horizon}x{ddim.action_dim}")
    rows = []
    base = _time_chunks(ddim, _obs(ddim.config.image_size, ddim.obs_horizon), args.repeats)
    base_p50 = statistics.median(base)
    rows.append(("diffusion DDIM-10", ddim.num_inference_steps, base_p50, ddim.action_horizon))
    obs = _obs(c.image_size, dd.obs_horizon)
    for mode in args.modes:
        for rounds in args.rounds if mode in ("maskgit", "adaptive") else [None]:
            dd.set_decoding(mode, rounds=rounds or c.decoding_rounds)
            times = _time_chunks(dd, obs, args.repeats)
            label = f"discrete {mode}" + (f" K={rounds}" if rounds else "")
            rows.append((label, dd.last_nfe, statistics.median(times), dd.action_horizon))
    if not args.policy_dir:
        # Same model without the prefix cache: every round re-runs image, word and state tokens.
        torch.manual_seed(0)
        full = make_policy("discrete_diffusion", discrete_diffusion_image_config(attention="full"), _fake_stats(),
                           instructions=[INSTRUCTION]).eval()
        times = _time_chunks(full, obs, args.repeats)
        rows.append(("discrete maskgit, full attn", full.last_nfe, statistics.median(times), full.action_horizon))
    print(f"\n{'method':<28}{'NFE/chunk':>10}{'p50 ms/chunk':>14}{'ms/action':>11}{'vs DDIM-10':>12}")
    for name, nfe, p50, horizon in rows:
        print(f"{name:<28}{nfe:>10}{1e3 * p50:>14.2f}{1e3 * p50 / horizon:>11.2f}{base_p50 / p50:>11.2f}x")
    print("(vs DDIM-10 = DDIM-10 p50 / this p50; > 1 is faster. ms/action divides by the chunk length: "
          "DDIM chunks hold 16 actions, discrete chunks 8.)")


def _multitask_config(args: argparse.Namespace):
    """The policy config ``--obs``/``--policy`` name (see ``main``'s help)."""
    if args.obs in ("state", "objects"):  # proprioception + privileged object state + instruction, no cameras
        # "state": env_state lists objects by role; "objects": by colour, so only the words name the roles.
        key, size = ("env_state", 14) if args.obs == "state" else ("objects", OBJECTS_DIM)
        state_dims = {"state": 10, key: size}
        if args.policy == "diffusion":  # the continuous baseline at a matched parameter count
            return diffusion_state_config(state_dims=state_dims, down_dims=[48, 96], text_encoder="vocab")
        return discrete_diffusion_state_config(
            state_dims=state_dims, hidden_dim=args.hidden_dim, num_layers=args.layers,
            label_sigma_bins=args.label_sigma, dropout=args.dropout, grounding_weight=args.grounding,
            state_tokens={"objects": OBJECT_SLOTS} if args.obs == "objects" else {})
    if args.obs == "pixels":  # the preset discrete_diffusion_pixels, its encoder pretrained on every task
        preset = OmegaConf.load(CONFIGS / "discrete_diffusion_pixels.yaml")
        return instantiate(preset).with_changes(
            hidden_dim=args.hidden_dim, num_layers=args.layers, label_sigma_bins=args.label_sigma,
            frame_pretraining={**OmegaConf.to_container(preset.frame_pretraining), "tasks": list(TASK_NAMES),
                               "resets": args.resets, "steps": args.pretrain_steps,
                               "finetune_steps": args.finetune_steps})
    if args.policy == "diffusion":  # the continuous baseline at a matched parameter count (~0.9 M)
        return diffusion_image_config(obs_horizon=1, vision_channels=[16, 32, 64], vision_blocks_per_stage=1,
                                      down_dims=[32, 64])
    return discrete_diffusion_image_config(hidden_dim=args.hidden_dim, num_layers=args.layers)


def train_multitask(args: argparse.Namespace) -> None:
    from robot_learn.data import EpisodeStore, WindowSampler
    from robot_learn.envs.demos import collect_multitask_demos, staged_store
    from robot_learn.policies import load_policy
    from robot_learn.policies.checkpoint import resolve_policy_dir
    from robot_learn.training import TrainConfig, Trainer, build_policy_for_view
    from robot_learn.training.encoder_finetune import finetune_frame_encoder, finetune_steps

    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    # --init: fine-tune that policy (its config, weights and normalisers) instead of building one.
    base = load_policy(resolve_policy_dir(args.init)) if args.init else None
    config = base.config if base is not None else _multitask_config(args)
    name = args.policy
    if args.members < 1:
        raise SystemExit(f"--members must be >= 1, got {args.members}")
    if args.members > 1:  # K VLAs in one run, each on its own --batch-size windows of every step
        if base is not None or args.policy != "discrete_diffusion" or args.replay_store:
            raise SystemExit("--members K builds a fresh discrete-diffusion ensemble; "
                             "it does not combine with --init, --policy diffusion or --replay-store")
        config, name = DiscreteDiffusionEnsembleConfig.of(config, args.members), None
    store_path = Path(args.store)
    if not store_path.exists():
        if base is not None:
            raise SystemExit(f"--store {store_path} does not exist; --init fine-tunes on an existing store")
        print(f"collecting {args.episodes} expert episodes of each of {', '.join(TASK_NAMES)} into {store_path}")
        cameras = (config.frame_encoder or {}).get("cameras", config.camera_names)
        settings = dict(cameras=cameras, image_size=config.image_size, noise=args.noise,
                        obs_keys=("state", "env_state", *(["objects"] if args.obs == "objects" else [])))
        with staged_store(store_path) as staging:  # a stopped collection leaves no store at --store
            if args.workers > 1:  # the same seeds, recorded by Ray workers through one writer
                from robot_learn.fleet.cluster import start_ray
                from robot_learn.fleet.parallel_jobs import collect_demos_on_ray

                import ray

                start_ray(num_cpus=args.workers)
                for task in TASK_NAMES:
                    collect_demos_on_ray(task, args.episodes, staging, args.workers, **settings)
                ray.shutdown()  # its idle workers would hold memory through training
            else:
                collect_multitask_demos(TASK_NAMES, args.episodes, staging, **settings)
    store = EpisodeStore.open(store_path, mode="r")
    demos = store.view(success=True, **({"task": list(args.tasks)} if args.tasks else {}))
    instructions = sorted({str(s) for s in demos.meta["instruction"]})
    print(f"data ready at {time.perf_counter() - t0:.0f} s")
    if base is not None:
        policy, encoder, derived = base, None, {}
        if getattr(base, "frame_encoder", None) is not None:
            raise SystemExit(f"--init {args.init}: fine-tuning a policy with a frame encoder is not supported here")
    else:
        # A frame encoder (pixels): pretrained on rendered scenes of every task (or reused), its
        # features cached in the store; the policy trains on them at state-policy speed.
        config, encoder, derived = prepare_frame_features(config, demos, TASK_NAMES[0], str(store_path))
        if encoder is not None:
            print(f"frame features ready at {time.perf_counter() - t0:.0f} s")
        policy = build_policy_for_view(config, demos, derived, name=name)
        if encoder is not None:
            policy.frame_encoder.load_state_dict(encoder.state_dict())
    # With the grounding loss the sampler also reads env_state (its role labels).
    window = dict(obs_keys=policy.training_obs_keys, obs_horizon=policy.obs_horizon,
                  action_horizon=policy.action_horizon)
    if not args.replay_store:
        sampler = WindowSampler(demos, batch_size=args.batch_size * args.members, seed=0, derived=derived, **window)
    else:  # co-fine-tuning: a share of every batch from the replayed (pretraining) demos
        from robot_learn.loops.aggregation import MixtureSampler, split_batch

        if derived:
            raise SystemExit("--replay-store: co-fine-tuning is for policies without a frame encoder")
        if not 0.0 < args.replay_share < 1.0:
            raise SystemExit(f"--replay-share must be in (0, 1), got {args.replay_share}")
        replay = EpisodeStore.open(args.replay_store, mode="r").view(success=True)
        sizes = split_batch(args.batch_size, {"target": 1.0 - args.replay_share, "replay": args.replay_share})
        sampler = MixtureSampler({"target": WindowSampler(demos, batch_size=sizes["target"], seed=0, **window),
                                  "replay": WindowSampler(replay, batch_size=sizes["replay"], seed=1, **window)})
        print(f"co-fine-tuning: {sizes['replay']} of each batch of {args.batch_size} from {replay.num_episodes} "
              f"demos of {args.replay_store}")
    tasks = sorted(set(str(t) for t in demos.meta["task"]))
    print(f"config: {demos.num_episodes} demos of {tasks}, {len(instructions)} instructions, "
          f"{sum(p.numel() for p in policy.parameters()) / 1e6:.2f} M params, {args.steps} steps x batch {args.batch_size}"
          f"{f' x {args.members} members' if args.members > 1 else ''}, "
          f"lr {args.lr}, threads {args.threads}" + (f", from {args.init}" if args.init else ""))
    cfg = TrainConfig(steps=args.steps, batch_size=args.batch_size * args.members, lr=args.lr, warmup_steps=200, ckpt_every=1000,
                      log_every=50, out_dir=args.out, num_threads=args.threads, weight_decay=1e-4)
    trainer = Trainer(policy, sampler, cfg)
    fit = trainer.fit()
    print(f"trained: loss {fit['loss']:.4f}, {fit['time']:.0f} s (total {time.perf_counter() - t0:.0f} s); policy in {fit['final_policy_dir']} "
          f"(metrics log has clipped_fraction and masked_accuracy per log interval)")
    if steps := finetune_steps(policy):  # --obs pixels --finetune-steps N: the encoder end to end on raw frames
        print(f"fine-tuning the frame encoder end to end for {steps} steps on raw frames")
        _, tuned = finetune_frame_encoder(trainer, demos, derived, cfg, sampler_seed=1)
        print(f"fine-tuned: loss {tuned['loss']:.4f}, {tuned['time']:.0f} s (total {time.perf_counter() - t0:.0f} s); "
              f"policy in {tuned['final_policy_dir']}")


def language_test(args: argparse.Namespace) -> None:
    from robot_learn.envs import make_env
    from robot_learn.evaluation.metrics import wilson_interval
    from robot_learn.policies import load_policy

    torch.set_num_threads(args.threads)
    policy = load_policy(args.policy_dir)  # the discrete VLA, or a continuous policy for comparison
    c = policy.config
    discrete = hasattr(policy, "set_decoding")
    modes = args.modes if discrete else ["DDIM"]
    print(f"config: policy {args.policy_dir} ({policy.name}), tasks {list(args.tasks)}, {args.episodes} held-out "
          f"seeds each (from {args.seed}), decoding {modes}" + (f", K={c.decoding_rounds}" if discrete else ""))
    labels = (("original", False, False), ("swapped", True, False), ("blank/orig", False, True), ("blank/swap", True, True))
    print(f"\n{'task':<12}{'decoding':<16}" + "".join(f"{label:>12}" for label, _, _ in labels))
    totals = {(mode, label): 0 for mode in modes for label, _, _ in labels}
    for task in args.tasks:
        cameras = [k.split("/", 1)[1] for k in policy.obs_shapes if k.startswith("images/")]
        env = make_env(task, cameras=tuple(cameras), image_size=c.image_size)
        try:
            for mode in modes:
                if discrete:
                    policy.set_decoding(mode)
                wins = {}
                for label, swap, blank in labels:
                    wins[label] = sum(_episode(env, policy, args.seed + i, swap, blank) for i in range(args.episodes))
                    totals[(mode, label)] += wins[label]
                print(f"{task:<12}{mode:<16}" + "".join(f"{wins[k]:>9}/{args.episodes:<2}" for k, _, _ in labels),
                      flush=True)
        finally:
            env.close()
    n = args.episodes * len(args.tasks)
    for mode in modes:
        cells = []
        for label, _, _ in labels:
            low, high = wilson_interval(totals[(mode, label)], n)
            cells.append(f"{label} {totals[(mode, label)] / n:.0%} [{low:.0%}, {high:.0%}]")
        print(f"all tasks, {mode}: " + "; ".join(cells))
    print("(success is judged against the instruction the env was reset with; a blank instruction cannot tell "
          "original from swapped, so blank/orig + blank/swap <= 100% for an instruction-following policy)")


def _episode(env, policy, seed: int, swap: bool, blank: bool) -> bool:
    obs, info = env.reset(seed=seed, options={"swap_roles": True} if swap else None)
    policy.reset()
    generator = torch.Generator().manual_seed(seed)
    while True:
        if blank:
            obs = {**obs, "instruction": ""}
        # Only what the policy reads at inference (a pixel policy: cameras, state, words).
        batched = {**{k: obs[k][None] for k in policy.obs_shapes if not k.startswith("images/")},
                   "images": {k: v[None] for k, v in obs["images"].items()}, "instruction": [obs["instruction"]]}
        action = policy.select_action(batched, generator=generator)[0].numpy().astype(np.float32)
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return bool(info["success"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    decode = sub.add_parser("decode")
    decode.add_argument("--policy-dir", default="")
    decode.add_argument("--repeats", type=int, default=30)
    decode.add_argument("--rounds", type=int, nargs="+", default=[12], help="K values for maskgit/adaptive rows")
    decode.add_argument("--modes", nargs="+", default=list(DECODINGS), choices=DECODINGS)
    train = sub.add_parser("train")
    train.add_argument("--store", default="data/all_tasks_demos_front_wrist_96.zarr")
    train.add_argument("--episodes", type=int, default=30, help="expert episodes per task")
    train.add_argument("--noise", type=float, default=0.0)
    train.add_argument("--steps", type=int, default=6000)
    train.add_argument("--batch-size", type=int, default=32)
    train.add_argument("--lr", type=float, default=3e-4)
    train.add_argument("--hidden-dim", type=int, default=128)
    train.add_argument("--layers", type=int, default=4)
    train.add_argument("--out", default="outputs/dd_multitask")
    train.add_argument("--label-sigma", type=float, default=0.0, help="HL-Gauss target width in bins (0: one-hot)")
    train.add_argument("--dropout", type=float, default=0.0)
    train.add_argument("--grounding", type=float, default=0.0,
                       help="--obs objects: weight of the auxiliary slot-role loss (labels from env_state)")
    train.add_argument("--obs", default="image", choices=("image", "state", "objects", "pixels"),
                       help="state: no cameras, state + env_state (objects by role) + instruction; "
                            "objects: state + objects (slots by colour) + instruction; pixels: the preset "
                            "discrete_diffusion_pixels (cameras, state, instruction) with its frame encoder "
                            "pretrained on every task")
    train.add_argument("--resets", type=int, default=16000, help="--obs pixels: rendered scenes for the encoder "
                       "(16000 with 6000 steps: 67%% pooled over three runs on the six tasks, 8000 with 3000: 56%% in one; "
                       "docs/benchmarks.md)")
    train.add_argument("--pretrain-steps", type=int, default=6000, help="--obs pixels: encoder pretraining steps")
    train.add_argument("--finetune-steps", type=int, default=0, help="--obs pixels: then fine-tune the frame "
                       "encoder end to end on raw frames for this many steps (<out>/encoder_finetune)")
    train.add_argument("--policy", default="discrete_diffusion", choices=("discrete_diffusion", "diffusion"),
                       help="diffusion: the continuous baseline with a matched parameter count")
    train.add_argument("--init", default="", help="fine-tune this policy (run, policy or checkpoint dir; "
                       "its config, weights and normalisers) instead of building a new one")
    train.add_argument("--tasks", nargs="+", default=None, choices=TASK_NAMES, help="train on these tasks' demos only (default: all)")
    train.add_argument("--replay-store", default="", help="co-fine-tuning: also draw --replay-share of every "
                       "batch from this store's demos (e.g. the base's multi-task store)")
    train.add_argument("--replay-share", type=float, default=0.5)
    train.add_argument("--workers", type=int, default=1, help="collect missing demos with this many Ray workers")
    train.add_argument("--members", type=int, default=1, help="train an ensemble of this many VLAs in one run, "
                       "each on its own --batch-size windows per step, decoded together (docs/benchmarks.md)")
    language = sub.add_parser("language")
    language.add_argument("--policy-dir", required=True)
    language.add_argument("--tasks", nargs="+", default=list(FORWARD_TASKS), choices=FORWARD_TASKS)
    language.add_argument("--episodes", type=int, default=20)
    language.add_argument("--seed", type=int, default=1_000_000)
    language.add_argument("--modes", nargs="+", default=["maskgit"], choices=DECODINGS)
    for p in (decode, train, language):
        p.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    {"decode": bench_decode, "train": train_multitask, "language": language_test}[args.command](args)


if __name__ == "__main__":
    main()
