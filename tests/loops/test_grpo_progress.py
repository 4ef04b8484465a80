"""A GRPO round killed between iterations resumes after its last finished one, with the
weights an uninterrupted round ends with; the store is cut back to the finished iterations'
rollouts; a checkpoint of other settings is refused with the keys that differ."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from robot_learn.data import EpisodeStore
from robot_learn.loops.grpo import GRPOSettings, run_grpo
from robot_learn.loops.grpo_progress import keep_first_episodes, load_progress, save_progress
from robot_learn.policies import load_policy
from robot_learn.training.checkpoint import CheckpointError
from tests.loops.test_grpo import ThresholdGroup, tiny_policy

SETTINGS = GRPOSettings(group_size=4, groups=2, iterations=3, lr=3e-3, epochs=2, minibatch=2)
KEYS = {"iterations": 3, "groups": 2}
LOW, HIGH = np.full(2, -np.inf), np.full(2, np.inf)


class Killed(Exception):
    """Stands in for the process dying inside an iteration."""


def _weights(policy):
    return [p.detach().clone() for p in policy.parameters()]


def test_a_round_killed_mid_iteration_resumes_after_its_last_finished_iteration(tmp_path):
    env = ThresholdGroup(4, threshold=3.0)
    whole = tiny_policy(decoding="maskgit", decoding_rounds=2)
    run_grpo(whole, env, SETTINGS, LOW, HIGH, seed=5, log=lambda _: None)

    policy = tiny_policy(decoding="maskgit", decoding_rounds=2)
    groups_seen = []

    def dies_in_the_last_iteration(group):
        groups_seen.append(group.start)
        if len(groups_seen) == 5:  # the first group of iteration 3 is done
            raise Killed

    def checkpoint(history, optimizer):
        save_progress(tmp_path, policy, optimizer, [vars(h) for h in history], episodes=len(groups_seen) * 4,
                      settings=KEYS)

    with pytest.raises(Killed):
        run_grpo(policy, env, SETTINGS, LOW, HIGH, seed=5, on_group=dies_in_the_last_iteration, log=lambda _: None,
                 on_iteration=checkpoint)
    progress = load_progress(tmp_path, KEYS)
    assert len(progress.history) == 2 and progress.episodes == 16

    resumed = load_policy(progress.policy_dir)
    lines = []
    history = run_grpo(resumed, env, SETTINGS, LOW, HIGH, seed=5, resume=progress, log=lines.append)
    assert history[2].groups_kept > 0, history  # iteration 3 did update
    assert [h.iteration for h in history] == [0, 1, 2] and len(lines) == 1 and lines[0].startswith("grpo iteration 3/3")
    for a, b in zip(_weights(whole), _weights(resumed), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-6)
    # The killed process's weights differ from both: the resumed round did update.
    assert any(not torch.allclose(a, b) for a, b in zip(_weights(policy), _weights(resumed), strict=True))


def test_a_checkpoint_of_other_settings_is_refused_naming_the_keys(tmp_path):
    policy = tiny_policy()
    optimizer = torch.optim.AdamW(policy.parameters())
    save_progress(tmp_path, policy, optimizer, [], episodes=0, settings=KEYS)
    with pytest.raises(ValueError, match=r"other settings \(groups: 2 then, 4 now\); rerun with those settings"):
        load_progress(tmp_path, {**KEYS, "groups": 4})
    assert load_progress(tmp_path / "elsewhere", KEYS) is None


def _store(path, lengths):
    with EpisodeStore.create(path) as store:
        for i, n in enumerate(lengths):
            store.append_episode({"action": np.full((n, 2), i, np.float32)}, {"task": "t", "instruction": "", "success": False, "seed": i, "source": "rollout"})


def test_the_store_is_cut_back_to_the_finished_iterations_episodes(tmp_path):
    path = tmp_path / "rollouts.zarr"
    _store(path, [3, 4, 5, 6])
    keep_first_episodes(path, 2)
    with EpisodeStore.open(path) as store:
        assert store.num_episodes == 2 and list(store.meta["seed"]) == [0, 1]
        assert store.read("action")[:, 0].tolist() == [0] * 3 + [1] * 4
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rollouts.zarr"]  # no copy made
    keep_first_episodes(path, 2)  # nothing to cut
    with EpisodeStore.open(path) as store:
        assert store.num_episodes == 2
    with pytest.raises(ValueError, match=r"rollouts.zarr holds 2 episodes, fewer than the 3 its GRPO round checkpoint "
                                         r"recorded; remove .*grpo_progress to redo the round"):
        keep_first_episodes(path, 3)


def test_a_damaged_round_checkpoint_is_one_clear_error(tmp_path):
    policy = tiny_policy()
    path = save_progress(tmp_path, policy, torch.optim.AdamW(policy.parameters()), [], episodes=0, settings=KEYS)
    (path / "progress.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match=r"GRPO round checkpoint .*progress.pt is missing or corrupt \(.*\); "
                                              r"remove .*grpo_progress to redo the round from its start"):
        load_progress(tmp_path, KEYS)
