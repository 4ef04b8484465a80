"""Does imagined data help? One base policy, fine-tuned on N rollouts imagined in a world
model, on N rollouts in MuJoCo, or not at all; every arm evaluated in MuJoCo.

Each arm is one round of ``robot-learn improve`` from the same base policy:

- ``sim``: ``loop=autonomous``, N rollouts in MuJoCo, the successes kept (the simulator's label);
- ``imagined:<scorer>``: ``loop=world_model``, N rollouts imagined by the world model, the
  ones ``<scorer>`` (``nearest`` or a success-model dir) judges successful kept;

both fine-tuned the same way (the loop's ``train_steps``, base demos mixed in). With
``--grpo ITERATIONS`` (a discrete-diffusion base policy), two more arms update the policy by
GRPO (``loop=grpo``: groups of ``--group-size`` rollouts from ``--groups`` starts per
iteration, binary success as the reward), in MuJoCo (``grpo:sim``) and in the world model
with each scorer (``grpo:imagined:<scorer>``). Then
``robot-learn eval`` of the base and of each arm's policy on the same held-out seeds, so
the arms are paired: the table gives success [95% CI], and the episodes won only by the
arm or only by the base with the exact McNemar p.

    .venv/bin/python benchmarks/bench_wm_improve.py --world-model outputs/wm/bin_place_residual_s32 \\
        --base-policy outputs/train/px_front64b/checkpoints/step_0004000/ema --rollouts 50 --eval-episodes 50 \\
        --scorers nearest outputs/wm/bin_place_residual_s32/success_model
    .venv/bin/python benchmarks/bench_wm_improve.py --world-model outputs/wm/res48_s46 \\
        --base-policy outputs/train/px_front64b/checkpoints/step_0004000/ema --rollouts 200 --eval-episodes 100 \\
        --eval-seeds 1000000 1100000 --improve-args train.lr=1e-4 --scorers nearest   # 200 paired seeds, lr 1e-4
    .venv/bin/python benchmarks/bench_wm_improve.py --world-model outputs/wm/RUN --base-policy VLA_DIR \\
        --policy-args "$VLA_FRONT_64" --grpo 4 --no-finetune-arms --out outputs/bench_wm_grpo
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from math import comb
from pathlib import Path

# The policy group the front-camera 64 px policies of the world-model benchmarks were trained with:
# `improve` renders the cameras it names and finds the demo store from it.
FRONT_64 = ("policy=diffusion_pixels policy.image_size=64 policy.frame_encoder.cameras=[front] "
            "+policy.frame_encoder.image_size=64")
VLA_FRONT_64 = FRONT_64.replace("policy=diffusion_pixels", "policy=discrete_diffusion_pixels")


def cli(*args: str) -> None:
    script = Path(sys.executable).with_name("robot-learn")
    print("$ robot-learn " + " ".join(shlex.quote(a) for a in args), flush=True)
    subprocess.run([str(script), *args], check=True, env={**os.environ, "MUJOCO_GL": "egl"},
                   stdout=subprocess.DEVNULL)


def evaluate(policy_dir: str, task: str, episodes: int, out_dir: Path, image_size: int,
             seeds: list[int]) -> list[bool]:
    """Success per held-out seed of ``policy_dir`` in MuJoCo: ``episodes`` seeds from each of
    ``seeds`` (the first set's report in ``out_dir``, the others' in ``out_dir``_s<seed>)."""
    wins = []
    for i, seed in enumerate(seeds):
        where = out_dir if i == 0 else out_dir.with_name(f"{out_dir.name}_s{seed}")
        if not (where / "report.json").exists():
            cli("eval", f"checkpoint={policy_dir}", f"task={task}", f"task.image_size={image_size}",
                f"episodes={episodes}", f"seed={seed}", "videos=0", f"out_dir={where}")
        report = json.loads((where / "report.json").read_text())["tasks"][task]
        if report["info"]["seed"] != seed or len(report["per_episode"]) != episodes:
            sys.exit(f"{where}/report.json holds {len(report['per_episode'])} episodes from seed "
                     f"{report['info']['seed']}, not {episodes} from {seed}: another --out, or delete it")
        wins += [bool(e["success"]) for e in report["per_episode"]]
    return wins


def check_same_round(run_dir: Path, overrides: list[str]) -> None:
    """Exit unless the improve round kept in ``run_dir`` was run with ``overrides`` (Hydra's
    record of its command line), so a reused arm is the arm this command asks for."""
    import yaml

    def settings(items: list[str]) -> list[str]:  # the run dir's own spelling does not matter
        return sorted(o for o in items if not o.startswith("run_dir="))

    recorded = run_dir / ".hydra" / "overrides.yaml"
    if recorded.exists() and settings(yaml.safe_load(recorded.read_text()) or []) != settings(overrides):
        sys.exit(f"{run_dir} holds a round run with other settings ({recorded}); delete it or use another --out")


def check_seed_sets(seeds: list[int], episodes: int) -> None:
    """Exit naming the sets unless they are disjoint and outside the seeds frame encoders
    pretrain on (from 2,000,000), so every evaluated layout is held out."""
    from robot_learn.envs.scene_frames import RESET_SEEDS, overlaps_pretraining_seeds

    ranges = sorted((s, s + episodes) for s in seeds)
    for (a, a_end), (b, _) in zip(ranges, ranges[1:]):
        if b < a_end:
            sys.exit(f"--eval-seeds {a} and {b} overlap with {episodes} episodes each")
    if any(overlaps_pretraining_seeds(s, episodes) for s in seeds):
        sys.exit(f"--eval-seeds {seeds}: seeds from {RESET_SEEDS:,} are the frame encoders' pretraining "
                 f"scenes, not held out; use seeds from 1,000,000 (e.g. 1000000 1100000)")


def mcnemar(only_a: int, only_b: int) -> float:
    """Exact two-sided McNemar p for discordant pairs."""
    n = only_a + only_b
    if n == 0:
        return 1.0
    tail = sum(comb(n, k) for k in range(min(only_a, only_b) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def main() -> None:
    from robot_learn.evaluation.metrics import wilson_interval

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--world-model", required=True, help="a world-model dir or `wm train` run dir")
    parser.add_argument("--base-policy", required=True, help="the policy every arm starts from")
    parser.add_argument("--task", default="bin_place")
    parser.add_argument("--rollouts", type=int, default=50, help="N: rollouts per arm")
    parser.add_argument("--train-steps", type=int, default=500)
    parser.add_argument("--eval-episodes", type=int, default=50, help="per seed set")
    parser.add_argument("--eval-seeds", type=int, nargs="+", default=[1_000_000],
                        help="first held-out seed of each set of --eval-episodes seeds (all arms paired on all; "
                             "disjoint, and under 2,000,000 where the encoders' pretraining scenes start)")
    parser.add_argument("--improve-args", default="",
                        help="more overrides for every arm's improve round (e.g. loop.train_lr=1e-3; "
                             "a pixel policy's rounds default to 1e-4)")
    parser.add_argument("--scorers", nargs="+", default=["nearest"], help="nearest and/or success-model dirs")
    parser.add_argument("--policy-args", default=FRONT_64, help="the policy group of the base policy")
    parser.add_argument("--image-size", type=int, default=64, help="the base policy's camera size")
    parser.add_argument("--grpo", type=int, default=0, metavar="ITERATIONS",
                        help="> 0: add GRPO arms (a discrete-diffusion base policy) of this many iterations")
    parser.add_argument("--groups", type=int, default=8, help="GRPO starts per iteration")
    parser.add_argument("--group-size", type=int, default=8, help="GRPO rollouts per start")
    parser.add_argument("--grpo-args", default="", help="more loop.* overrides for the GRPO arms (e.g. loop.lr=1e-4)")
    parser.add_argument("--no-finetune-arms", action="store_true",
                        help="skip the success-filtered fine-tuning arms (sim, imagined:<scorer>)")
    parser.add_argument("--out", default="outputs/bench_wm_improve")
    args = parser.parse_args()
    check_seed_sets(args.eval_seeds, args.eval_episodes)
    out = Path(args.out)
    common = ["rounds=1", f"task={args.task}", f"base_policy={args.base_policy}", "base_eval=false",
              "loop.eval_episodes=1", *shlex.split(args.policy_args), *shlex.split(args.improve_args)]
    finetune = [f"loop.episodes={args.rollouts}", f"loop.train_steps={args.train_steps}"]
    arms = {} if args.no_finetune_arms else {"sim": ["loop=autonomous", *finetune]}
    for scorer in [] if args.no_finetune_arms else args.scorers:
        arms[f"imagined:{Path(scorer).name}"] = ["loop=world_model", f"loop.world_model={args.world_model}",
                                                 f"loop.scorer={scorer}", *finetune]
    if args.grpo:
        grpo = ["loop=grpo", f"loop.iterations={args.grpo}", f"loop.groups={args.groups}",
                f"loop.group_size={args.group_size}", *shlex.split(args.grpo_args)]
        arms["grpo:sim"] = [*grpo, "loop.sources=[autonomous]"]
        for scorer in args.scorers:
            arms[f"grpo:imagined:{Path(scorer).name}"] = [*grpo, f"loop.world_model={args.world_model}",
                                                          f"loop.scorer={scorer}"]
    results = {"base": evaluate(args.base_policy, args.task, args.eval_episodes, out / "eval_base", args.image_size,
                                args.eval_seeds)}
    kept, seconds = {}, {}
    for name, loop in arms.items():
        run_dir = out / name.replace(":", "_")
        start = time.perf_counter()
        if not (run_dir / "rounds.json").exists():
            cli("improve", *loop, *common, f"run_dir={run_dir}")
        check_same_round(run_dir, [*loop, *common, f"run_dir={run_dir}"])
        seconds[name] = time.perf_counter() - start
        round_1 = json.loads((run_dir / "rounds.json").read_text())[-1]
        kept[name] = round_1.get("train_episodes", {}).get("successes", round_1["collected_successes"])
        results[name] = evaluate(round_1["policy_dir"], args.task, args.eval_episodes, run_dir / "eval",
                                 args.image_size, args.eval_seeds)

    base = results["base"]
    print(f"\n{args.task}: base {args.base_policy}, {args.rollouts} rollouts per fine-tuning arm, {args.train_steps} "
          f"fine-tuning steps{' (' + args.improve_args + ')' if args.improve_args else ''}, {args.eval_episodes} "
          f"held-out seeds from each of "
          f"{', '.join(f'{s:,}' for s in args.eval_seeds)} in MuJoCo")
    if args.grpo:
        print(f"GRPO arms: {args.grpo} iterations x {args.groups} groups x {args.group_size} rollouts; the kept "
              f"column counts their rollouts that succeeded (or were judged to)")
    print("| arm | rollouts kept as successes | success [95% CI] | won only by arm / only by base (McNemar p) | "
          "won only by arm / only by sim (p) | arm wall s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, wins in results.items():
        n, k = len(wins), sum(wins)
        low, high = wilson_interval(k, n)
        against = {ref: paired(wins, results[ref]) for ref in ("base", "sim") if ref in results and ref != name}
        print(f"| {name} | {kept.get(name, '-')} | {k / n:.1%} [{low:.1%}, {high:.1%}] | {against.get('base', '-')} | "
              f"{against.get('sim', '-') if name != 'base' else '-'} | {seconds.get(name, 0):.0f} |")


def paired(wins: list[bool], reference: list[bool]) -> str:
    """Episodes won only by ``wins`` / only by ``reference`` on the same seeds, and the exact McNemar p."""
    only, only_ref = sum(a and not b for a, b in zip(wins, reference)), sum(b and not a for a, b in zip(wins, reference))
    return f"{only} / {only_ref} ({mcnemar(only, only_ref):.3f})"


if __name__ == "__main__":
    main()
