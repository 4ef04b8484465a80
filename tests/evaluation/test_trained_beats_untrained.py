"""Learning, end to end: a state diffusion policy trained briefly on real expert
demos succeeds where the same policy untrained does not."""

import pytest
import torch

from robot_learn.envs.demos import collect_demos
from robot_learn.data import EpisodeStore, WindowSampler
from robot_learn.evaluation import evaluate
from robot_learn.policies import diffusion_state_config, make_policy
from robot_learn.training import Trainer, TrainConfig

TASK = "bin_place"  # the most tolerant forward task: a small budget is enough
EPISODES = 12


def _policy(stats):
    torch.manual_seed(0)
    config = diffusion_state_config(down_dims=[32, 64, 128], state_hidden_dims=[64],
                                    state_feature_dim=32, timestep_embed_dim=64)
    return make_policy("diffusion", config, stats)


@pytest.mark.slow  # ~2-4 min on 2 cores; `make test` runs it, `make test-fast` skips it
def test_trained_state_policy_beats_untrained_on_success(tmp_path):
    torch.set_num_threads(2)
    store_path = tmp_path / "demos.zarr"
    collect_demos(TASK, 40, store_path, cameras=(), progress_bar=False)
    store = EpisodeStore.open(store_path)
    stats = store.stats(["state", "env_state", "action"])

    untrained = _policy(stats)
    before = evaluate(untrained, TASK, episodes=EPISODES, workers=2, vectorization="sync")

    policy = _policy(stats)
    sampler = WindowSampler(store, obs_keys=("state", "env_state"), obs_horizon=2,
                            action_horizon=16, batch_size=64, seed=0)
    cfg = TrainConfig(steps=1500, batch_size=64, lr=1e-3, warmup_steps=100, ckpt_every=0,
                      log_every=100, out_dir=str(tmp_path / "run"), device="cpu",
                      num_threads=2, progress_bar=False)
    trainer = Trainer(policy, sampler, cfg)
    trainer.fit()
    after = evaluate(trainer.ema_policy, TASK, episodes=EPISODES, workers=2, vectorization="sync")

    # Measured on this recipe: 0/12 untrained, 4/12 trained (mean progress 0.45).
    assert before.summary.successes == 0
    assert after.summary.successes >= 2, after.summary
    assert after.summary.mean_progress > before.summary.mean_progress + 0.25, (before.summary, after.summary)
