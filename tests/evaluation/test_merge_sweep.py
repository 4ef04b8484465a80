"""The RETAIN alpha sweep reports target success and retention per alpha."""

from types import SimpleNamespace

import pytest
import torch

from robot_learn.evaluation import alpha_sweep
from robot_learn.policies import diffusion_state_config, make_policy


def approx(value):
    return pytest.approx(value, abs=1e-4)


def flat(policy):
    return torch.cat([p.detach().flatten() for p in policy.parameters()])


def test_alpha_sweep_scores_each_merge_on_the_target_and_the_other_tasks():
    torch.manual_seed(0)
    base = make_policy("diffusion", diffusion_state_config(down_dims=[16, 32]))
    torch.manual_seed(1)
    finetuned = make_policy("diffusion", diffusion_state_config(down_dims=[16, 32]))
    span = (flat(base) - flat(finetuned)).norm()

    def success(policy, task):
        # A stand-in score with a known answer: closeness to the fine-tuned weights on the
        # target task, to the base weights elsewhere.
        ref = finetuned if task == "stack" else base
        return SimpleNamespace(success_rate=float(1 - (flat(policy) - flat(ref)).norm() / span))

    rows = alpha_sweep(base, finetuned, [0.0, 0.5, 1.0], "stack", ["unstack"], success=success)
    assert [r["alpha"] for r in rows] == [0.0, 0.5, 1.0]
    targets = [r["target"].success_rate for r in rows]
    retention = [r["retention"]["unstack"] for r in rows]
    assert targets == [approx(0.0), approx(0.5), approx(1.0)]
    assert retention == [approx(1.0), approx(0.5), approx(0.0)]
