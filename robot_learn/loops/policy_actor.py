"""Running a batched ``Policy`` on one robot's observations, one action per control step."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import torch


class PolicyActor:
    """Feeds a robot observation to ``policy.select_action`` and returns a numpy action.

    Only the keys the policy reads (its ``obs_shapes``, :attr:`observation_keys`) and
    the instruction are passed, with a batch dimension of one; the policy fills in
    its own conditioning inputs. Sampling noise comes from a generator seeded with ``seed``.
    """

    def __init__(self, policy: Any, seed: int = 0) -> None:
        self.policy = policy.eval()
        self.generator = torch.Generator(device=policy.device).manual_seed(seed)

    @property
    def observation_keys(self) -> tuple[str, ...]:
        """The observation keys the policy needs from the robot."""
        return tuple(self.policy.obs_shapes)

    def reset(self) -> None:
        self.policy.reset()

    def act(self, obs: Mapping[str, Any]) -> np.ndarray:
        batch: dict[str, Any] = {}
        for key in self.policy.obs_shapes:
            if key.startswith("images/"):
                batch.setdefault("images", {})[key.split("/", 1)[1]] = np.asarray(obs["images"][key[7:]])[None]
            else:
                batch[key] = np.asarray(obs[key], dtype=np.float32)[None]
        if "instruction" in obs:
            batch["instruction"] = [str(obs["instruction"])]
        action = self.policy.select_action(batch, generator=self.generator)
        return action[0].detach().cpu().numpy().astype(np.float32)
