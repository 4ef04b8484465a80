"""train.prefetch: batches drawn ahead on a thread train the very weights of a plain run, across a resume."""

import torch
from training_fixtures import build_store, make_sampler, make_tiny_policy

from robot_learn.training import TrainConfig, Trainer


def test_training_with_prefetch_and_a_resume_gives_the_weights_of_a_plain_run(tmp_path, one_torch_thread):
    store = build_store(tmp_path / "s.zarr", num_episodes=3, length=20)

    def fit(out, steps, prefetch):
        cfg = TrainConfig(steps=steps, batch_size=8, warmup_steps=1, ckpt_every=2, log_every=2, out_dir=str(out),
                          device="cpu", progress_bar=False, lr=1e-3, prefetch=prefetch)
        trainer = Trainer(make_tiny_policy(store), make_sampler(store, 8, 0), cfg)
        trainer.fit()
        return trainer.policy.state_dict()

    plain = fit(tmp_path / "plain", 6, 0)
    for key, value in fit(tmp_path / "ahead", 6, 3).items():
        torch.testing.assert_close(value, plain[key], rtol=0, atol=0)
    # Stopped at step 4 and resumed (the LR schedule of a 4-step run differs, so the
    # reference is a plain run stopped and resumed the same way).
    fit(tmp_path / "plain_stopped", 4, 0)
    plain_resumed = fit(tmp_path / "plain_stopped", 6, 0)
    fit(tmp_path / "ahead_stopped", 4, 3)
    for key, value in fit(tmp_path / "ahead_stopped", 6, 3).items():
        torch.testing.assert_close(value, plain_resumed[key], rtol=0, atol=0)
