"""One discrete-diffusion policy trains on a store holding several tasks, through the Trainer."""

import csv

import torch

from robot_learn.envs.demos import collect_multitask_demos
from robot_learn.data import EpisodeStore, WindowSampler
from robot_learn.policies import make_policy
from robot_learn.policies.discrete_diffusion import discrete_diffusion_state_config
from robot_learn.training import TrainConfig, Trainer


def test_trainer_fits_a_multitask_store_and_logs_the_clipped_fraction(tmp_path):
    torch.set_num_threads(1)
    collect_multitask_demos(["stack", "bin_take"], 1, tmp_path / "demos.zarr", cameras=[], progress_bar=False)
    store = EpisodeStore.open(tmp_path / "demos.zarr", mode="r")
    assert sorted(set(store.meta["task"].tolist())) == ["bin_take", "stack"]
    instructions = sorted({str(s) for s in store.meta["instruction"]})
    config = discrete_diffusion_state_config(hidden_dim=32, num_layers=1, num_heads=2, num_bins=64)
    policy = make_policy("discrete_diffusion", config, store.stats(["state", "action"]), instructions=instructions)
    sampler = WindowSampler(store.view(success=True), obs_keys=tuple(policy.obs_shapes), obs_horizon=1,
                            action_horizon=8, batch_size=16, seed=0)
    cfg = TrainConfig(steps=40, batch_size=16, lr=3e-3, warmup_steps=0, ckpt_every=40, log_every=20,
                      out_dir=str(tmp_path / "run"), progress_bar=False, device="cpu")
    fit = Trainer(policy, sampler, cfg).fit()
    with open(tmp_path / "run" / "metrics.csv") as handle:
        rows = [row for row in csv.DictReader(handle) if row.get("clipped_fraction")]
    assert rows, "compute_loss's clipped_fraction should reach the metrics log"
    assert 0.0 <= float(rows[-1]["clipped_fraction"]) < 0.1  # q01/q99 of the same data clip only the tails
    assert fit["loss"] < 0.8 * 4.16  # log(64) = 4.16 is the loss of a uniform guess
