"""How well could a perfect world model rank these policies, given how many episodes each side has?

The ranking goal (issue 15) compares success rates measured on two finite samples: MuJoCo
episodes and imagined episodes. Even a world model whose imagined success equals each policy's
true success would not reach a correlation of 1, because both rates carry binomial noise, and
with policies close together in quality that noise can hide their order. This script draws both
rates from the given true rates many times and reports the correlation such a perfect,
calibrated model would get: its median, its 5th percentile, and how often it reaches the goal.
``--observed PEARSON SPEARMAN`` adds how often the perfect model does no better than a measured
pair (a one-sided p-value for "the world model ranks perfectly"). ``--imagined`` gives the measured
imagined rates instead: both sides are then drawn around what was measured (a parametric bootstrap),
and the script prints a 95% interval for each measured correlation instead.

    python benchmarks/wm_ranking_power.py --rates 0 2 8 22 32 18 12 10 15 --designs 40:20 40:40 200:100 \\
        --observed 0.70 0.58

The true rates are not known; the measured ones stand in for them. Measured rates spread more
than true ones (their noise adds to the spread), so the figures are, if anything, optimistic.
"""

from __future__ import annotations

import argparse

import numpy as np

from bench_wm_ranking import pearson, spearman


def draws(rates: np.ndarray, sim_episodes: int, wm_episodes: int, repeats: int, seed: int,
          imagined: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Pearson and Spearman of ``repeats`` pairs of binomial rate vectors, the imagined side around
    ``imagined`` if given, else around ``rates`` (draws with no spread dropped)."""
    rng = np.random.default_rng(seed)
    sim = rng.binomial(sim_episodes, rates, size=(repeats, len(rates))) / sim_episodes
    wm_rates = rates if imagined is None else imagined
    wm = rng.binomial(wm_episodes, wm_rates, size=(repeats, len(rates))) / wm_episodes
    keep = (sim.std(axis=1) > 0) & (wm.std(axis=1) > 0)
    pairs = list(zip(sim[keep], wm[keep]))
    return (np.array([pearson(a, b) for a, b in pairs]),
            np.array([spearman(a, b) for a, b in pairs]))


def design(text: str) -> tuple[int, int]:
    try:
        sim, wm = (int(part) for part in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"design {text!r}: expected SIM:WM episode counts, e.g. 40:20") from None
    if sim < 1 or wm < 1:
        raise argparse.ArgumentTypeError(f"design {text!r}: episode counts must be >= 1")
    return sim, wm


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rates", nargs="+", type=float, required=True, help="true success per policy, in percent")
    parser.add_argument("--designs", nargs="+", type=design, default=[(40, 20), (40, 40), (200, 100)],
                        help="SIM:WM episodes per policy")
    parser.add_argument("--goal", type=float, default=0.8)
    parser.add_argument("--observed", nargs=2, type=float, metavar=("PEARSON", "SPEARMAN"))
    parser.add_argument("--imagined", nargs="+", type=float, help="measured imagined success per policy, in percent "
                        "(same order as --rates): a 95%% interval for the measured correlations")
    parser.add_argument("--repeats", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rates = np.asarray(args.rates) / 100.0
    if len(rates) < 3 or ((rates < 0) | (rates > 1)).any():
        parser.error(f"--rates: need >= 3 rates in [0, 100], got {args.rates}")
    print(f"wm_ranking_power: {len(rates)} policies at {args.rates} %, {args.repeats} draws, seed {args.seed}")
    if args.imagined is not None:
        imagined = np.asarray(args.imagined) / 100.0
        if len(imagined) != len(rates) or ((imagined < 0) | (imagined > 1)).any():
            parser.error(f"--imagined: need {len(rates)} rates in [0, 100] (one per --rates), got {args.imagined}")
        measured = pearson(rates, imagined), spearman(rates, imagined)
        print(f"measured: Pearson {measured[0]:.2f}, Spearman {measured[1]:.2f}")
        print("| MuJoCo : imagined episodes | Pearson [95% interval] | Spearman [95% interval] | P(both >= goal) |")
        print("| --- | --- | --- | --- |")
        for sim_episodes, wm_episodes in args.designs:
            p, s = draws(rates, sim_episodes, wm_episodes, args.repeats, args.seed, imagined)
            print(f"| {sim_episodes} : {wm_episodes} | {measured[0]:.2f} [{np.percentile(p, 2.5):.2f}, "
                  f"{np.percentile(p, 97.5):.2f}] | {measured[1]:.2f} [{np.percentile(s, 2.5):.2f}, "
                  f"{np.percentile(s, 97.5):.2f}] | {np.mean((p >= args.goal) & (s >= args.goal)):.2f} |")
        return
    header = ("| MuJoCo : imagined episodes | Pearson median [5th pct] | P(Pearson >= goal) "
              "| Spearman median [5th pct] | P(Spearman >= goal) |")
    if args.observed:
        header += " P(both <= observed) |"
    print(header)
    print("|" + " --- |" * (header.count("|") - 1))
    for sim_episodes, wm_episodes in args.designs:
        p, s = draws(rates, sim_episodes, wm_episodes, args.repeats, args.seed)
        row = (f"| {sim_episodes} : {wm_episodes} | {np.median(p):.2f} [{np.percentile(p, 5):.2f}] | "
               f"{np.mean(p >= args.goal):.2f} | {np.median(s):.2f} [{np.percentile(s, 5):.2f}] | "
               f"{np.mean(s >= args.goal):.2f} |")
        if args.observed:
            row += f" {np.mean((p <= args.observed[0]) & (s <= args.observed[1])):.3f} |"
        print(row)


if __name__ == "__main__":
    main()
