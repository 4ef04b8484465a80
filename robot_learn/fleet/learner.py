"""The fleet's learner: trains without pause on offline plus online data and publishes weights.

It is the ordinary :class:`~robot_learn.training.Trainer` (AdamW, EMA, checkpoints,
exact resume) on an :class:`~.online_offline_sampler.OnlineOfflineSampler`. Every
``publish_every`` steps (the trainer's evaluation hook) the EMA weights go to the
weight hub as ``<run>/step_XXXXXXX``. A learner that dies is restarted by Ray and its
:meth:`Learner.run` called again: the trainer resumes from its last checkpoint, and the
hub keeps the newest weights meanwhile (a republished older step is ignored).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence


class StopTraining(Exception):
    """Raised from the publish hook to end :meth:`Learner.run` early, on request."""


class Learner:
    """``policy_config`` (a policy config dataclass) is built for the offline data at
    ``offline_path`` (normalisers from its episodes of ``tasks``); ``train`` is the
    :class:`~robot_learn.training.TrainConfig` (its ``out_dir`` holds the checkpoints);
    ``online_share`` and ``online_data`` are the sampler's."""

    def __init__(self, policy_config: Any, offline_path: str | Path, online_path: str | Path,
                 tasks: Sequence[str], train: Any, hub: Any, *, publish_every: int = 10,
                 online_share: float = 0.5, online_data: str = "hgdagger", run_name: str = "fleet") -> None:
        import dataclasses

        import torch

        from robot_learn.data import EpisodeStore
        from robot_learn.fleet.online_offline_sampler import OnlineOfflineSampler
        from robot_learn.training import Trainer, build_policy_for_view, find_latest_checkpoint

        torch.set_num_threads(1)
        if publish_every < 1:
            raise ValueError(f"publish_every must be >= 1, got {publish_every}")
        self.hub, self.run_name, self._stop = hub, run_name, False
        offline = EpisodeStore.open(offline_path, "r").view(task=list(tasks), success=True)
        self.policy = build_policy_for_view(policy_config, offline)
        self.sampler = OnlineOfflineSampler(
            offline, online_path, tasks, obs_keys=self.policy.training_obs_keys,
            obs_horizon=policy_config.obs_horizon, action_horizon=policy_config.action_horizon,
            batch_size=train.batch_size, online_share=online_share, online_data=online_data, seed=train.seed)
        self.cfg = dataclasses.replace(train, eval_every=publish_every, resume=True)
        self.trainer = Trainer(self.policy, self.sampler, self.cfg, evaluate_fn=self._publish)
        # Actors need weights before the first publish: the last checkpoint's after a restart.
        ckpt = find_latest_checkpoint(self.cfg.out_dir)
        self.resumed_from = int(ckpt.name.split("_")[-1]) if ckpt is not None else 0  # fit() resumes there
        if ckpt is not None:
            from robot_learn.policies import load_policy

            self._publish(load_policy(Path(ckpt) / "ema"), self.resumed_from)
        else:
            self._publish(self.trainer.ema_policy, 0)

    def spaces(self) -> Any:
        from robot_learn.fleet.registration import PolicySpaces

        return PolicySpaces.of(self.policy)

    def run(self) -> dict[str, Any]:
        """Train to ``train.steps`` (resuming from the last checkpoint), or until :meth:`stop`."""
        self._stop = False
        try:
            result = self.trainer.fit()
        except StopTraining:
            self.trainer.save_checkpoint()
            result = {"step": self.trainer.step, "stopped": True}
        return {**result, "online_windows": self.sampler.online_windows}

    def stop(self) -> None:
        """Ask :meth:`run` to end at its next publish (after a checkpoint)."""
        self._stop = True

    def progress(self) -> dict[str, int]:
        """Steps trained (counting those before a restart), the checkpoint step this process
        started from (0: none) and windows drawn from online data."""
        return {"step": int(self.trainer.step), "resumed_from": self.resumed_from, "online_windows": int(self.sampler.online_windows),
                "online_episodes": int(self.sampler.online_episodes), "batch_size": int(self.cfg.batch_size)}

    def _publish(self, ema_policy: Any, step: int) -> dict[str, float]:
        import ray

        from robot_learn.fleet.policy_transfer import policy_to_files

        ray.get(self.hub.publish.remote(f"{self.run_name}/step_{step:07d}", policy_to_files(ema_policy), step))
        if self._stop:
            raise StopTraining
        return {"online_windows": float(self.sampler.online_windows)}
