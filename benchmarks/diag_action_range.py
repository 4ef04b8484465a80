"""How far a store's actions reach outside a policy's action normaliser.

A policy's sampler clips normalised chunks to +-``clip_sample_range`` (1: its first demos'
min/max), so actions beyond that cannot be commanded. For an improvement run's collected
store this prints, for every step and for the human's steps, the share outside [-1, 1]
and the largest |normalised action| per dimension.

    .venv/bin/python benchmarks/diag_action_range.py outputs/pilot_eff/stack/base_3000 \\
        OUT/stack/hgdagger/collected.zarr
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from robot_learn.data import EpisodeStore
from robot_learn.policies import load_policy
from robot_learn.policies.checkpoint import resolve_policy_dir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("policy", help="a policy, run or checkpoint dir (its action normaliser is used)")
    parser.add_argument("store", help="an episode store with 'action' (and 'intervention') per step")
    args = parser.parse_args()
    policy = load_policy(resolve_policy_dir(args.policy))
    view = EpisodeStore.open(args.store).view()
    actions = torch.as_tensor(np.asarray(view.read("action"), dtype=np.float32))
    normalised = policy.action_normalizer.normalize(actions).abs().numpy()
    human = (np.asarray(view.read("intervention"), dtype=bool) if "intervention" in view.store.keys
             else np.zeros(len(normalised), dtype=bool))
    for name, rows in (("every step", np.ones(len(normalised), dtype=bool)), ("human steps", human)):
        x = normalised[rows]
        if not len(x):
            print(f"{name}: none")
            continue
        print(f"{name}: {len(x)}; outside [-1, 1] in some dimension: {(x.max(axis=1) > 1).mean():.1%}; "
              f"largest |x| per dimension: {' '.join(f'{v:.2f}' for v in x.max(axis=0))}; "
              f"share > 1 per dimension: {' '.join(f'{v:.0%}' for v in (x > 1).mean(axis=0))}")


if __name__ == "__main__":
    main()
