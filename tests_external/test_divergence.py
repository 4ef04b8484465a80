"""A diverged ALOHA simulation ends its episode as a failure instead of raising.

Joint targets that swing between +-3.2 rad every step (bang-bang, finite) make real
MuJoCo raise mjWARN_BADQACC within about 30 steps (dm_control's PhysicsError).
"""

from dataclasses import dataclass, field

import numpy as np
import pytest
import torch

from robot_learn.data import EpisodeRecorder
from robot_learn.envs import make_env
from robot_learn.envs.demos import run_expert
from robot_learn.evaluation import evaluate
from robot_learn.evaluation.report import build_report, render_markdown
from robot_learn.policies.base import Policy

SWING = 3.2  # rad, just past the joints' ctrlrange of +-pi
STEPS = 60  # divergence came at step 13 (29 on insertion seed 2) on seeds 0-3


def swing(t: int) -> np.ndarray:
    return np.full(14, SWING * (-1) ** t, np.float32)


@pytest.mark.parametrize("name", ["aloha/insertion", "aloha/transfer-cube"])
def test_diverged_step_is_a_truncated_failure_and_reset_recovers(name):
    env = make_env(name, cameras=(), max_steps=STEPS + 1)
    fresh, _ = env.reset(seed=0)
    for t in range(STEPS):
        obs, reward, terminated, truncated, info = env.step(swing(t))
        if truncated or terminated:
            break
        assert "diverged" not in info
    assert t < STEPS - 1, "the swinging targets never made MuJoCo diverge"
    assert truncated and not terminated and reward == 0.0
    assert info["diverged"] is True and info["success"] is False and 0.0 <= info["progress"] <= 1.0
    assert np.isfinite(obs["state"]).all() and np.isfinite(obs["env_state"]).all()
    again, info = env.reset(seed=0)  # the next episode starts clean
    assert np.array_equal(again["state"], fresh["state"]) and np.array_equal(again["env_state"], fresh["env_state"])
    _, _, _, truncated, info = env.step(again["state"].copy())
    assert not truncated and "diverged" not in info
    env.close()


class SwingingExpert:
    """Scripted 'expert' whose targets swing (not a robot-learn class)."""

    phase = 0

    def reset(self, env):
        self.phase = 0

    def act(self, obs, env):
        self.phase += 1
        return swing(self.phase - 1)


def test_collection_ends_a_diverged_episode_as_a_failure():
    env = make_env("aloha/insertion", cameras=(), max_steps=STEPS)
    recorder = EpisodeRecorder(("state", "env_state"))
    _, infos = run_expert(env, SwingingExpert(), 0, recorder)
    assert len(infos) < STEPS and infos[-1]["diverged"] and not infos[-1]["success"]
    assert len(recorder) == len(infos)
    env.close()


@dataclass
class SwingConfig:
    state_dims: dict = field(default_factory=lambda: {"state": 14})
    camera_names: tuple = ()
    image_size: int = 96
    obs_horizon: int = 1
    action_horizon: int = 2
    execute_horizon: int = 2
    action_dim: int = 14


class SwingingPolicy(Policy):
    """A policy whose chunks swing the joint targets every step."""

    name = "swinging"
    config_class = SwingConfig

    def compute_loss(self, batch):
        raise NotImplementedError("not trainable")

    def predict_action_chunk(self, obs, generator=None):
        batch = obs["state"].shape[0]
        return torch.from_numpy(np.stack([swing(0), swing(1)])).expand(batch, 2, 14)


def test_evaluation_counts_diverged_episodes_as_failures_and_goes_on():
    # Two waves of two sub-envs: the evaluation goes on after each diverged episode.
    result = evaluate(SwingingPolicy(SwingConfig()), "aloha/insertion", episodes=4, workers=2,
                      vectorization="sync", videos=0, max_steps=STEPS)
    assert len(result.episodes) == 4
    assert all(e.diverged and not e.success and e.length < STEPS for e in result.episodes), result.episodes
    assert result.diverged_episodes == 4 and result.summary.successes == 0
    report = build_report([result])
    assert report["tasks"]["aloha/insertion"]["diverged_episodes"] == 4
    assert "4 of 4 episodes ended when the simulation diverged" in render_markdown(report)
