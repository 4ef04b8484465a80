"""The fleet learner's sampler: what of the online store it trains on, per ``online_data``.

Actions are tagged by who produced them (demos 0, the operator 1, the policy in an
episode that needed rescuing -1, an autonomous success 2), so a batch shows where each
window came from.
"""

from __future__ import annotations

import numpy as np
import pytest

from robot_learn.data import EpisodeStore
from robot_learn.fleet.online_offline_sampler import OnlineOfflineSampler

DEMO, HUMAN, POLICY, AUTONOMOUS = 0.0, 1.0, -1.0, 2.0


def episode(actions, human, success, source):
    actions = np.asarray(actions, dtype=np.float32)
    steps = {"state": np.stack([actions, actions], axis=1), "action": actions[:, None].repeat(2, axis=1),
             "intervention": np.asarray(human, dtype=bool)}
    return steps, {"task": "reach", "instruction": "reach", "success": success, "seed": 0, "source": source}


def human_run(length, runs):
    """Actions and intervention flags: the operator in ``runs`` ([start, end)), the policy elsewhere."""
    human = np.zeros(length, dtype=bool)
    for start, end in runs:
        human[start:end] = True
    return np.where(human, HUMAN, POLICY), human


@pytest.fixture()
def stores(tmp_path):
    offline = EpisodeStore.create(tmp_path / "demos.zarr")
    for _ in range(2):
        offline.append_episode(*episode([DEMO] * 12, [False] * 12, True, "demo"))
    online = EpisodeStore.create(tmp_path / "online.zarr")
    online.append_episode(*episode([AUTONOMOUS] * 10, [False] * 10, True, "rollout"))   # 0: its own success
    acts, human = human_run(12, [(3, 7), (8, 9)])
    online.append_episode(*episode(acts, human, True, "intervention"))                   # 1: rescued
    online.append_episode(*episode([POLICY] * 10, [False] * 10, False, "rollout"))       # 2: failed alone
    acts, human = human_run(8, [(0, 4)])
    online.append_episode(*episode(acts, human, False, "intervention"))                  # 3: corrected, failed
    return offline, online, tmp_path


def sampler(stores, online_data, share=1.0, **kw):
    offline, _, root = stores
    return OnlineOfflineSampler(offline.view(), root / "online.zarr", ["reach"], obs_keys=["state"], obs_horizon=1,
                                action_horizon=2, batch_size=64, online_share=share, online_data=online_data, **kw)


def drawn(s, batches=40):
    """(episode, t) of every window anchor drawn, and the tags of every action in them."""
    batches = [s.sample() for _ in range(batches)]
    anchors = {(int(e), int(t)) for b in batches for e, t in zip(b["episode"], b["t"])}
    return anchors, set(np.unique(np.concatenate([b["action"][..., 0].ravel() for b in batches])).tolist())


def test_hgdagger_trains_on_the_operators_runs_and_autonomous_successes_only(stores):
    s = sampler(stores, "hgdagger")
    anchors, tags = drawn(s)
    # ep 0 whole; ep 1's run [3, 7) (its one-step run [8, 9) is too short); ep 3's run [0, 4); nothing of ep 2.
    assert anchors == {(0, t) for t in range(10)} | {(1, t) for t in range(3, 7)} | {(3, t) for t in range(4)}
    assert tags == {HUMAN, AUTONOMOUS}, "a window held a step the policy drove in a rescued episode"
    assert s.online_episodes == 3


def test_successes_trains_on_whole_successful_episodes_policy_steps_included(stores):
    s = sampler(stores, "successes")
    anchors, tags = drawn(s)
    assert anchors == {(0, t) for t in range(10)} | {(1, t) for t in range(12)}
    assert tags == {HUMAN, POLICY, AUTONOMOUS}


def test_the_share_splits_each_batch_and_new_online_episodes_join_at_a_refresh(stores):
    _, online, _ = stores
    s = sampler(stores, "hgdagger", share=0.25, refresh_every=5)
    actions = s.sample()["action"][..., 0]
    assert (actions[:, 0] == DEMO).sum() == 48      # 64 * (1 - 0.25)
    assert s.online_windows == 16
    acts, human = human_run(6, [(1, 6)])
    online.append_episode(*episode(acts * 0 + 5.0, human, True, "intervention"))
    for _ in range(4):
        assert 5.0 not in s.sample()["action"]
    assert 5.0 in np.concatenate([s.sample()["action"].ravel() for _ in range(20)])  # refreshed at batch 5
    assert s.online_episodes == 4


def test_bad_settings_are_refused_naming_the_choices(stores):
    _, _, root = stores
    with pytest.raises(ValueError, match="online_data must be one of hgdagger, successes, got 'all'"):
        sampler(stores, "all")
    with pytest.raises(ValueError, match="min_human_run must be >= 1"):
        sampler(stores, "hgdagger", min_human_run=0)
    assert EpisodeStore.open(root / "online.zarr").num_episodes == 4   # nothing lost
