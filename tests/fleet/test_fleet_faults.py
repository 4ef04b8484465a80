"""The Ray fleet on a local Ray with 2 actors: registration, a killed actor, a killed learner.

Real Ray, real MuJoCo twins with the simulated operator, a real zarr store, a tiny
diffusion policy. One fleet serves the module's tests, in file order.
"""

from __future__ import annotations

import time

import pytest
import torch

ray = pytest.importorskip("ray")  # the fleet extra; `make test` installs it

from robot_learn.data import EpisodeStore  # noqa: E402
from robot_learn.envs.demos import collect_demos  # noqa: E402
from robot_learn.fleet import Fleet, FleetRegistrationError  # noqa: E402
from robot_learn.fleet.policy_transfer import policy_to_files  # noqa: E402
from robot_learn.policies import DiffusionConfig  # noqa: E402
from robot_learn.training import TrainConfig, build_policy_for_view  # noqa: E402

TASK, MAX_STEPS = "stack", 30
ROBOT = {"_target_": "robot_learn.envs.make_sim_robot", "task": TASK, "cameras": [], "max_steps": MAX_STEPS}
OPERATOR = {"_target_": "robot_learn.loops.operators.SimulatedOperator", "task": TASK, "reaction_steps": 0,
            "budget_s": 1.0}


def tiny_config(**state_dims) -> DiffusionConfig:
    return DiffusionConfig(action_dim=5, state_dims=state_dims or {"state": 10, "env_state": 14}, obs_horizon=2,
                           action_horizon=8, execute_horizon=4, state_hidden_dims=[16], state_feature_dim=8,
                           down_dims=[16, 32], timestep_embed_dim=16, num_inference_steps=2)


def actor_spec(name: str, **extra) -> dict:
    return {"name": name, "task": TASK, "robot": ROBOT, "operator": OPERATOR, "max_steps": MAX_STEPS,
            "num_cpus": 0.5, **extra}


def wait_for(condition, fleet, what: str, timeout_s: float = 120.0) -> None:
    """Poll the fleet (it keeps the actors busy) until ``condition()`` holds."""
    deadline = time.perf_counter() + timeout_s
    while not condition():
        assert time.perf_counter() < deadline, f"timed out waiting for {what}"
        fleet.poll(timeout_s=0.2)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("fleet")
    collect_demos(TASK, 2, root / "demos.zarr", cameras=(), max_steps=60, progress_bar=False)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"OMP_NUM_THREADS": "1", "MUJOCO_GL": "egl"}})
    train = TrainConfig(steps=1_000_000, batch_size=4, warmup_steps=1, ckpt_every=5, keep_last_k=2, log_every=1000,
                        device="cpu", num_threads=1, progress_bar=False, out_dir=str(root / "learner"))
    fleet = Fleet(root / "online.zarr", {"policy_config": tiny_config(), "offline_path": str(root / "demos.zarr"),
                                         "tasks": [TASK], "train": train, "publish_every": 5}, learner_cpus=0.5)
    fleet.root = root
    fleet.start()
    try:
        yield fleet
    finally:
        fleet.shutdown()
        ray.shutdown()


def test_actor_whose_policy_sees_other_observations_is_refused_naming_both_sides(fleet):
    demos = EpisodeStore.open(fleet.root / "demos.zarr").view()
    other = build_policy_for_view(tiny_config(state=10), demos)  # no env_state
    with pytest.raises(FleetRegistrationError) as err:
        fleet.add_actors([actor_spec("odd", policy_files=policy_to_files(other), policy_name="state-only")])
    message = str(err.value)
    assert "\n" not in message and "actor 'odd' refused" in message
    assert "state-only" in message and "observes {state (10,)} and acts in 5 dims" in message
    assert "learner" in message and "env_state (14,), state (10,)" in message
    assert "odd" not in fleet.actors
    # Then the fleet's own two actors register. robot-0 keeps a real arm's pace (30 steps at
    # 10 Hz: 3 s an episode), so the next test can kill it mid-episode; unpaced, a 30-step
    # episode of the twin can end between the progress probe and the kill.
    fleet.add_actors([actor_spec("robot-0", realtime=True), actor_spec("robot-1")])
    assert sorted(fleet.actors) == ["robot-0", "robot-1"]


def test_killed_actor_is_restarted_its_partial_episode_discarded_and_the_learner_goes_on(fleet):
    step_at_kill = fleet.learner_progress()["step"]
    wait_for(lambda: fleet.actor_progress("robot-0")["steps"] >= 3, fleet, "robot-0 mid-episode")
    ray.kill(fleet.actors["robot-0"], no_restart=False)
    wait_for(lambda: any(e["actor"] == "robot-0" for e in fleet.report.episodes)
             and len(fleet.report.episodes) >= 3, fleet, "robot-0 to commit after its restart")
    wait_for(lambda: fleet.learner_progress()["step"] > step_at_kill, fleet, "the learner to go on")
    report = fleet.report
    assert report.actor_restarts == {"robot-0": 1, "robot-1": 0}
    assert len(report.discarded) == 1 and report.discarded[0]["actor"] == "robot-0"
    store = EpisodeStore.open(fleet.root / "online.zarr")
    # Episodes still on their way back to the driver may be in the store already.
    assert len(report.episodes) <= store.num_episodes <= len(report.episodes) + len(fleet.actors)
    assert report.discarded[0]["seed"] not in [int(s) for s in store.meta["seed"]]
    # Every stored episode is whole: it ran to success or to the step limit.
    lengths = store.episode_ends - store.episode_starts
    assert all(n == MAX_STEPS or ok for n, ok in zip(lengths, store.meta["success"])), (lengths, store.meta["success"])
    # Each episode names the learner weights that drove it.
    for e in report.episodes:
        assert str(store.meta["policy_id"][e["index"]]) == e["policy_id"] and e["policy_id"].startswith("fleet/step_")


def test_killed_learner_resumes_from_its_last_checkpoint(fleet):
    from robot_learn.training import find_latest_checkpoint

    wait_for(lambda: find_latest_checkpoint(fleet.root / "learner") is not None, fleet, "a learner checkpoint")
    ray.kill(fleet.learner, no_restart=False)
    checkpoint = int(find_latest_checkpoint(fleet.root / "learner").name.split("_")[-1])
    wait_for(lambda: fleet.report.learner_restarts >= 1, fleet, "the learner's restart")
    wait_for(lambda: (fleet.learner_progress() or {"step": -1})["step"] > checkpoint, fleet,
             "the restarted learner to train past its checkpoint")
    # It started from the last checkpoint written before it died, not from step 0.
    assert fleet.learner_progress()["resumed_from"] >= checkpoint > 0
    episodes = len(fleet.report.episodes)
    wait_for(lambda: len(fleet.report.episodes) > episodes, fleet, "episodes after the learner's restart")
    assert fleet.report.learner_restarts == 1
    assert len({e["index"] for e in fleet.report.episodes}) == len(fleet.report.episodes)
