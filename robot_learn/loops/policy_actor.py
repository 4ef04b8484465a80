"""Running a batched ``Policy`` on one robot's observations, one action per control step."""

from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np
import torch


class PolicyActor:
    """Feeds a robot observation to ``policy.select_action`` and returns a numpy action.

    Only the keys the policy reads (its ``obs_shapes``, :attr:`observation_keys`) and
    the instruction are passed, with a batch dimension of one; the policy fills in
    its own conditioning inputs. Sampling noise comes from a generator seeded with ``seed``.
    ``steering`` (a chunk predictor such as ``loops.steering.build_steering``'s; None:
    the policy's own sampling) plans each chunk; :meth:`steer` changes it mid-session.
    """

    def __init__(self, policy: Any, seed: int = 0, steering: Callable[..., torch.Tensor] | None = None) -> None:
        self.policy = policy.eval()
        self.generator = torch.Generator(device=policy.device).manual_seed(seed)
        self.steering = steering

    def steer(self, steering: Callable[..., torch.Tensor] | None) -> None:
        """Plan chunks with ``steering`` from now on (None: unsteered); the queued actions,
        planned for the previous request, are dropped."""
        self.steering = steering
        self.policy.drop_queued_actions()

    @property
    def observation_keys(self) -> tuple[str, ...]:
        """The observation keys the policy needs from the robot."""
        return tuple(self.policy.obs_shapes)

    def reset(self) -> None:
        """Episode start: the policy's history and queue, and a stateful steering's (e.g. PCG's phase)."""
        self.policy.reset()
        if hasattr(self.steering, "reset"):
            self.steering.reset()

    def act(self, obs: Mapping[str, Any]) -> np.ndarray:
        batch: dict[str, Any] = {}
        for key in self.policy.obs_shapes:
            if key.startswith("images/"):
                batch.setdefault("images", {})[key.split("/", 1)[1]] = np.asarray(obs["images"][key[7:]])[None]
            else:
                batch[key] = np.asarray(obs[key], dtype=np.float32)[None]
        if "instruction" in obs:
            batch["instruction"] = [str(obs["instruction"])]
        action = self.policy.select_action(batch, generator=self.generator, predict=self.steering)
        return action[0].detach().cpu().numpy().astype(np.float32)
