import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import torch

from robot_learn.data import EpisodeStore, WindowSampler
from robot_learn.envs import SimRobot
from robot_learn.loops import DISCONNECT_MARK, OPERATOR_PAUSE_MARK, POLICY_FAULT_MARK, HITLSession, Mode
from robot_learn.loops.aggregation import write_selection
from robot_learn.loops.operators import KeyboardOperator, ReplaySource, SimulatedOperator

sys.path.insert(0, os.path.dirname(__file__))
from session_fixtures import HoldPolicy, NaNPolicy  # noqa: E402

torch.set_num_threads(1)


@pytest.fixture
def robot():
    r = SimRobot("stack", cameras=(), max_steps=30)
    r.connect()
    yield r
    r.disconnect()


def keyboard(events):
    return KeyboardOperator(ReplaySource(events))


def test_recorded_flags_match_who_was_in_control_step_by_step(robot, tmp_path):
    store = EpisodeStore.create(tmp_path / "s.zarr")
    op = keyboard([{"step": 5, "type": "key_down", "key": "space"}, {"step": 5, "type": "key_down", "key": "q"},
                   {"step": 12, "type": "key_down", "key": "space"}])
    session = HITLSession(robot, HoldPolicy(), op, store, "stack", max_steps=20, round_index=2)
    before = time.time()
    ep = session.run_episode(seed=0)
    after = time.time()
    steps = store.episode(ep.index)["steps"]
    expected = np.zeros(20, dtype=bool)
    expected[5:12] = True
    np.testing.assert_array_equal(steps["intervention"], expected)
    # Each step's wall-clock time is stored with it, as float64 seconds since the epoch.
    stamps = steps["timestamp"]
    assert stamps.dtype == np.float64 and stamps.shape == (20,)
    assert np.all(np.diff(stamps) > 0) and before <= stamps[0] and stamps[-1] <= after
    # Human steps executed the operator's action (z rising), not the policy's proposal.
    dz = steps["action"][5:12, 2] - steps["policy_action"][5:12, 2]
    assert np.all(dz > 0.015)
    np.testing.assert_allclose(steps["action"][:5], steps["policy_action"][:5])
    meta = store.episode(ep.index)["meta"]
    assert (meta["source"], meta["round"], meta["operator"]) == ("intervention", 2, "keyboard")
    assert ep.takeovers == 1 and ep.human_s == pytest.approx(0.7)


def test_episode_without_human_steps_is_tagged_rollout(robot, tmp_path):
    store = EpisodeStore.create(tmp_path / "s.zarr")
    session = HITLSession(robot, HoldPolicy(), keyboard([]), store, "stack", max_steps=10)
    ep = session.run_episode(seed=1)
    assert store.episode(ep.index)["meta"]["source"] == "rollout"
    assert not store.episode(ep.index)["steps"]["intervention"].any()


def test_policy_nan_is_caught_before_execution_and_pauses_after_repeats(robot, tmp_path):
    store = EpisodeStore.create(tmp_path / "s.zarr")
    session = HITLSession(robot, NaNPolicy(bad_from=3), keyboard([]), store, "stack", max_steps=20,
                          max_policy_faults=3)
    ep = session.run_episode(seed=0)  # the env raises on NaN: reaching here means none was sent
    steps = store.episode(ep.index)["steps"]
    assert ep.policy_faults == 3 and ep.paused and "non-finite" in ep.reason
    assert np.isfinite(steps["action"]).all() and np.isfinite(steps["policy_action"]).all()
    assert len(steps["action"]) == 5  # 3 good steps + 2 held steps; the 3rd fault paused


def test_device_disconnect_pauses_and_keeps_marked_episode(robot, tmp_path):
    store = EpisodeStore.create(tmp_path / "s.zarr")
    op = keyboard([{"step": 2, "type": "key_down", "key": "space"}, {"step": 6, "type": "disconnect"}])
    session = HITLSession(robot, HoldPolicy(), op, store, "stack", max_steps=20)
    done = session.run(episodes=3, seed=0)
    assert len(done) == 1 and done[0].paused and session.paused
    assert "disconnected" in done[0].reason
    episode = store.episode(done[0].index)
    assert len(episode["steps"]["action"]) == 6
    assert episode["meta"]["operator"] == "keyboard" + DISCONNECT_MARK


def test_operator_pause_is_labelled_as_the_operators_not_a_disconnect(robot, tmp_path):
    store = EpisodeStore.create(tmp_path / "s.zarr")
    session = HITLSession(robot, HoldPolicy(), keyboard([{"step": 4, "type": "key_down", "key": "p"}]), store,
                          "stack", max_steps=20)
    done = session.run(episodes=3, seed=0)
    assert len(done) == 1 and done[0].paused and done[0].pause_mark == OPERATOR_PAUSE_MARK
    assert "disconnect" not in done[0].reason and "'keyboard' paused" in done[0].reason
    episode = store.episode(done[0].index)
    assert len(episode["steps"]["action"]) == 4
    assert episode["meta"]["operator"] == "keyboard" + OPERATOR_PAUSE_MARK
    # Resuming counts the paused episode as the operator's own, whatever its mark.
    assert session.committed() == 1


def test_policy_fault_pause_has_its_own_label(robot, tmp_path):
    store = EpisodeStore.create(tmp_path / "s.zarr")
    session = HITLSession(robot, NaNPolicy(bad_from=2), keyboard([]), store, "stack", max_steps=20,
                          max_policy_faults=2)
    ep = session.run_episode(seed=0)
    assert ep.paused and store.episode(ep.index)["meta"]["operator"] == "keyboard" + POLICY_FAULT_MARK


def test_takeover_requested_during_reset_applies_at_the_next_episode_start(robot, tmp_path):
    store = EpisodeStore.create(tmp_path / "s.zarr")
    op = keyboard([{"step": 4, "type": "key_down", "key": "r"}])  # 'r' asks for a scene reset
    session = HITLSession(robot, HoldPolicy(), op, store, "stack", max_steps=8)
    first = session.run_episode(seed=0)
    assert first.steps == 4 and session.arbiter.mode is Mode.RESET
    session.arbiter.submit("takeover")  # pressed while the scene is being reset
    assert session.arbiter.step() is Mode.RESET
    second = session.run_episode(seed=1)
    assert second.human_steps == second.steps
    assert store.episode(second.index)["steps"]["intervention"].all()


def test_simulated_operator_takes_over_a_stalled_policy_after_its_reaction_delay(robot, tmp_path):
    store = EpisodeStore.create(tmp_path / "s.zarr")
    op = SimulatedOperator("stack", reaction_steps=3)
    op.rule.stall_steps = 5
    session = HITLSession(robot, HoldPolicy(), op, store, "stack", max_steps=30)
    ep = session.run_episode(seed=0)
    human = store.episode(ep.index)["steps"]["intervention"]
    first = int(np.argmax(human))
    assert op.reasons[0] == "stall" and ep.takeovers >= 1
    # The stall is seen at step 5 (stall_steps + 1 observations); the takeover lands 3 steps later.
    assert first == 5 + 3


def test_simulated_operator_respects_human_seconds_budget(robot, tmp_path):
    store = EpisodeStore.create(tmp_path / "s.zarr")
    op = SimulatedOperator("stack", reaction_steps=0, budget_s=0.5, rate_hz=10.0)
    op.rule.stall_steps = 3
    session = HITLSession(robot, HoldPolicy(), op, store, "stack", max_steps=30)
    session.run(episodes=2, seed=0)
    total_human = sum(int(store.episode(i)["steps"]["intervention"].sum()) for i in range(2))
    assert total_human == 5


def test_store_begun_without_timestamps_keeps_its_schema_and_still_trains(robot, tmp_path):
    new = EpisodeStore.create(tmp_path / "new.zarr")
    HITLSession(robot, HoldPolicy(), None, new, "stack", max_steps=6).run_episode(seed=0)
    assert "timestamp" in new.keys
    # A store written before timestamps were recorded: the same episode without them.
    old = EpisodeStore.create(tmp_path / "old.zarr")
    episode = new.episode(0)
    old.append_episode({k: v for k, v in episode["steps"].items() if k != "timestamp"},
                       {k: v for k, v in episode["meta"].items() if k != "created"})
    with pytest.warns(UserWarning, match="without per-step timestamps"):
        session = HITLSession(robot, HoldPolicy(), keyboard([]), old, "stack", max_steps=6)
    session.run_episode(seed=1)
    assert old.num_episodes == 2 and "timestamp" not in old.keys
    # Training reads only the keys it needs, from either kind of store.
    for store in (old, new):
        batch = WindowSampler(store, obs_keys=("state",), obs_horizon=2, action_horizon=4, batch_size=3).sample()
        assert batch["action"].shape == (3, 4, 5)
    out = EpisodeStore.create(tmp_path / "train.zarr")
    write_selection(out, new, {0: [(0, 6)]}, "intervention", keys=old.keys)
    assert out.keys == old.keys


KILLED_SESSION = textwrap.dedent("""
    import sys, torch
    torch.set_num_threads(1)
    sys.path.insert(0, {here!r})
    from session_fixtures import HoldPolicy
    from robot_learn.envs import SimRobot
    from robot_learn.loops import HITLSession
    from robot_learn.data import EpisodeStore
    robot = SimRobot("stack", cameras=(), max_steps=40); robot.connect()
    session = HITLSession(robot, HoldPolicy(), None, EpisodeStore.open_or_create({path!r}), "stack", max_steps=40,
                          round_index=1, realtime=True, rate_hz=100.0)
    session.run(episodes=50, seed=0)
""")


def test_killed_session_keeps_committed_episodes_and_resumes(tmp_path):
    path = str(tmp_path / "s.zarr")
    code = KILLED_SESSION.format(here=os.path.dirname(os.path.abspath(__file__)), path=path)
    proc = subprocess.Popen([sys.executable, "-c", code], env={**os.environ, "OMP_NUM_THREADS": "1"})
    deadline = time.time() + 120
    try:
        while time.time() < deadline:
            time.sleep(0.5)
            if os.path.exists(path):
                try:
                    if EpisodeStore.open(path).num_episodes >= 2:
                        break
                except Exception:
                    pass
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    store = EpisodeStore.open(path, mode="a")
    kept = store.num_episodes
    assert 2 <= kept < 50
    for i in range(kept):
        assert len(store.episode(i)["steps"]["action"]) == 40
    robot = SimRobot("stack", cameras=(), max_steps=40)
    robot.connect()
    session = HITLSession(robot, HoldPolicy(), None, store, "stack", max_steps=40, round_index=1)
    done = session.run(episodes=kept + 1, seed=0)
    assert [d.seed for d in done] == [kept]
    assert store.num_episodes == kept + 1
