"""Who may join a fleet: an actor's policy must see and act in the learner's spaces.

An actor runs the learner's weights, so its policy must take the same observations
(keys and shapes) and give actions of the same width. An actor that differs is
refused when it registers, before it records anything, with one line naming both sides.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping


class FleetRegistrationError(ValueError):
    """An actor's policy does not fit the learner's; the message names both sides."""


@dataclass(frozen=True)
class PolicySpaces:
    """The observation keys and shapes a policy reads, and the width of its actions."""

    obs_shapes: Mapping[str, tuple[int, ...]]
    action_dim: int

    @classmethod
    def of(cls, policy: Any) -> "PolicySpaces":
        """The spaces of a :class:`~robot_learn.policies.Policy` (its ``obs_shapes``, ``action_dim``)."""
        return cls({k: tuple(int(d) for d in v) for k, v in policy.obs_shapes.items()}, int(policy.action_dim))

    def describe(self) -> str:
        keys = ", ".join(f"{k} {tuple(v)}" for k, v in sorted(self.obs_shapes.items()))
        return f"observes {{{keys}}} and acts in {self.action_dim} dims"

    def same_as(self, other: "PolicySpaces") -> bool:
        return (dict(self.obs_shapes) == dict(other.obs_shapes)) and self.action_dim == other.action_dim


def check_registration(actor: str, actor_spaces: PolicySpaces, learner_spaces: PolicySpaces,
                       actor_policy: str = "", learner_policy: str = "") -> None:
    """FleetRegistrationError unless ``actor``'s policy has the learner's spaces."""
    if actor_spaces.same_as(learner_spaces):
        return
    mine = f" ({actor_policy})" if actor_policy else ""
    theirs = f" ({learner_policy})" if learner_policy else ""
    raise FleetRegistrationError(
        f"actor '{actor}' refused: its policy{mine} {actor_spaces.describe()}, but the learner's policy{theirs} "
        f"{learner_spaces.describe()}; give the actor a policy with the learner's observations and actions")
