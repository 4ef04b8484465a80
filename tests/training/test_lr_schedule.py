"""The LR schedule: linear warmup, then cosine decay to zero."""

import math

import pytest
import torch

from robot_learn.training import make_warmup_cosine_scheduler, warmup_cosine_factor


def _lrs(base_lr: float, warmup: int, total: int) -> list[float]:
    param = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.AdamW([param], lr=base_lr)
    sched = make_warmup_cosine_scheduler(opt, warmup, total)
    lrs = []
    for _ in range(total):
        lrs.append(opt.param_groups[0]["lr"])  # the LR this update uses
        opt.step()
        sched.step()
    return lrs


def test_lr_rises_linearly_during_warmup_then_decays_by_cosine_to_zero():
    base, warmup, total = 1e-3, 10, 110
    lrs = _lrs(base, warmup, total)
    # Warmup: strictly increasing, linear, first update already non-zero, peak = base.
    assert lrs[0] == pytest.approx(base / warmup)
    assert all(b > a for a, b in zip(lrs[:warmup], lrs[1:warmup]))
    assert lrs[warmup - 1] == pytest.approx(base)
    diffs = [b - a for a, b in zip(lrs[: warmup - 1], lrs[1:warmup])]
    assert max(diffs) == pytest.approx(min(diffs))
    # Decay: non-increasing from the peak, half-way at the middle, ~0 at the end.
    decay = lrs[warmup:]
    assert all(b <= a for a, b in zip(decay, decay[1:]))
    assert lrs[warmup + 50] == pytest.approx(base * 0.5, rel=1e-6)
    assert lrs[-1] < base * 1e-3
    # Cosine shape, not linear: a quarter of the way down is still above the linear line.
    assert lrs[warmup + 25] == pytest.approx(base * 0.5 * (1 + math.cos(math.pi * 0.25)))
    assert lrs[warmup + 25] > base * 0.75


def test_schedule_without_warmup_starts_at_the_base_lr():
    assert warmup_cosine_factor(0, 0, 100) == 1.0
    assert warmup_cosine_factor(100, 0, 100) == pytest.approx(0.0, abs=1e-12)


def test_warmup_longer_than_training_is_capped_at_the_run_length():
    lrs = _lrs(1.0, 50, 20)
    assert lrs == sorted(lrs)  # still rising: all of the (short) run is warmup
    assert lrs[-1] == pytest.approx(1.0)


def test_scheduler_state_resumes_at_the_same_lr():
    param = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.AdamW([param], lr=1.0)
    sched = make_warmup_cosine_scheduler(opt, 5, 50)
    for _ in range(17):
        opt.step()
        sched.step()
    state = sched.state_dict()
    opt2 = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    opt2.load_state_dict(opt.state_dict())
    sched2 = make_warmup_cosine_scheduler(opt2, 5, 50)
    sched2.load_state_dict(state)
    opt.step(), sched.step(), opt2.step(), sched2.step()
    assert opt2.param_groups[0]["lr"] == opt.param_groups[0]["lr"] == pytest.approx(warmup_cosine_factor(18, 5, 50))
