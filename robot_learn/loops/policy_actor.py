"""Running a batched ``Policy`` on one robot's observations, one action per control step."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import torch


class PolicyActor:
    """Feeds a robot observation to ``policy.select_action`` and returns a numpy action.

    Only the keys the policy reads (its ``obs_shapes``) and the instruction are passed,
    with a batch dimension of one. ``condition`` adds fixed low-dim inputs that the
    robot does not observe (e.g. ``{"advantage": [1.0]}`` for an advantage-conditioned
    policy). Sampling noise comes from a generator seeded with ``seed``.
    """

    def __init__(self, policy: Any, seed: int = 0, condition: Mapping[str, Any] | None = None) -> None:
        self.policy = policy.eval()
        self.condition = {k: np.asarray(v, dtype=np.float32) for k, v in (condition or {}).items()}
        self.generator = torch.Generator(device=policy.device).manual_seed(seed)

    def reset(self) -> None:
        self.policy.reset()

    def act(self, obs: Mapping[str, Any]) -> np.ndarray:
        batch: dict[str, Any] = {}
        for key in self.policy.obs_shapes:
            if key in self.condition:
                batch[key] = self.condition[key][None]
            elif key.startswith("images/"):
                batch.setdefault("images", {})[key.split("/", 1)[1]] = np.asarray(obs["images"][key[7:]])[None]
            else:
                batch[key] = np.asarray(obs[key], dtype=np.float32)[None]
        if "instruction" in obs:
            batch["instruction"] = [str(obs["instruction"])]
        action = self.policy.select_action(batch, generator=self.generator)
        return action[0].detach().cpu().numpy().astype(np.float32)
