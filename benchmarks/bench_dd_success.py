"""Multi-task success: the discrete-diffusion VLA in each decoding mode beside the
continuous diffusion policy (same demo store, matched parameter count) and the
untrained discrete-diffusion policy, per task and on average, with 95% Wilson intervals.

Every row uses the same held-out seeds of each task and the instruction the env gives.

  python benchmarks/bench_dd_success.py --dd outputs/dd_multitask/final_policy \\
      --baseline outputs/diffusion_multitask/final_policy --episodes 10
  python benchmarks/bench_dd_success.py --dd RUN1/policy RUN2/policy RUN3/policy   # decoded together
  python benchmarks/bench_dd_success.py --dd ENSEMBLE/policy --member 0            # one member alone
"""

from __future__ import annotations

import argparse
import time

import torch

from robot_learn.envs import TASK_NAMES
from robot_learn.evaluation import evaluate
from robot_learn.evaluation.results import summarize_episodes
from robot_learn.policies import load_policy, make_policy
from robot_learn.policies.discrete_diffusion import DECODINGS, DiscreteDiffusionEnsemble


def _rows(args: argparse.Namespace) -> list[tuple[str, object, str | None, int | None]]:
    policies = [load_policy(d) for d in args.dd]
    for d, p in zip(args.dd, policies):
        if p.name not in ("discrete_diffusion", "discrete_diffusion_ensemble"):
            raise SystemExit(f"--dd {d} holds a '{p.name}' policy; give discrete_diffusion(_ensemble) policies")
    try:  # several: decoded together as one ensemble
        dd = policies[0] if len(policies) == 1 else DiscreteDiffusionEnsemble.from_members(policies)
        dd = dd.member_policy(args.member) if args.member is not None else dd
    except (ValueError, AttributeError, IndexError) as error:
        raise SystemExit(f"--dd {' '.join(args.dd)} --member {args.member}: {error}") from None
    rows: list[tuple[str, object, str | None, int | None]] = []
    for m in args.modes:
        iterative = m in ("maskgit", "adaptive") and args.rounds
        rows += [(f"discrete {m} K={k}", dd, m, k) for k in args.rounds] if iterative else [(f"discrete {m}", dd, m, None)]
    if args.baseline:
        rows.append(("continuous DDIM-10", load_policy(args.baseline, expected_type="diffusion"), None, None))
    if args.untrained:
        torch.manual_seed(0)
        untrained = make_policy(dd.name, dd.config, None)
        buffers = dict(dd.named_buffers())  # same normalisers / tokenizer range as the trained policy, fresh weights
        untrained.load_state_dict({k: buffers.get(k, v) for k, v in untrained.state_dict().items()})
        rows.append(("discrete untrained", untrained, "maskgit", None))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dd", required=True, nargs="+", help="discrete-diffusion policy directory; several: "
                    "decoded together as one ensemble (same config and frame encoder)")
    ap.add_argument("--member", type=int, default=None, help="evaluate only this member of the ensemble")
    ap.add_argument("--baseline", default="", help="continuous diffusion policy directory")
    ap.add_argument("--tasks", nargs="+", default=list(TASK_NAMES), choices=TASK_NAMES)
    ap.add_argument("--modes", nargs="+", default=list(DECODINGS), choices=DECODINGS)
    ap.add_argument("--episodes", type=int, default=10, help="held-out seeds per task and row")
    ap.add_argument("--untrained", action="store_true", help="add the untrained discrete-diffusion policy")
    ap.add_argument("--rounds", type=int, nargs="+", default=None,
                    help="decoding rounds K for maskgit/adaptive rows (several give one row each; default: the config's)")
    ap.add_argument("--token-temperature", type=float, default=None,
                    help="override the checkpoint's token sampling temperature (0 = argmax)")
    ap.add_argument("--choice-temperature", type=float, default=None,
                    help="override the Gumbel temperature of the keep/re-mask choice")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    rows = _rows(args)
    print(f"config: dd {args.dd}, baseline {args.baseline or '-'}, tasks {args.tasks}, {args.episodes} held-out "
          f"seeds per task, threads {args.threads}, "
          f"token temperature {args.token_temperature}, choice temperature {args.choice_temperature}")
    for name, policy, _, _ in rows:
        print(f"  {name}: {sum(p.numel() for p in policy.parameters()) / 1e6:.2f} M params")
    header = f"{'policy':<28}" + "".join(f"{t:>12}" for t in args.tasks) + f"{'average [95% CI]':>24}{'time':>8}"
    print("\n" + header)
    default_rounds = rows[0][1].config.decoding_rounds
    for name, policy, mode, rounds in rows:
        if mode is not None:
            knobs = {k: v for k, v in (("token_temperature", args.token_temperature),
                                       ("choice_temperature", args.choice_temperature)) if v is not None}
            policy.set_decoding(mode, rounds=rounds or default_rounds, **knobs)
        t0 = time.perf_counter()
        results = [evaluate(policy, task, episodes=args.episodes, workers=1, videos=0, vectorization="sync")
                   for task in args.tasks]
        episodes = [e for r in results for e in r.episodes]
        total = summarize_episodes(episodes)
        cells = "".join(f"{r.summary.successes:>9}/{r.summary.episodes:<2}" for r in results)
        avg = f"{total.success_rate:.0%} [{total.ci_low:.0%}, {total.ci_high:.0%}]"
        print(f"{name:<28}{cells}{avg:>24}{time.perf_counter() - t0:>7.0f}s", flush=True)
    print("(cells: successes / episodes per task; interval: Wilson 95% over all tasks' episodes)")


if __name__ == "__main__":
    main()
