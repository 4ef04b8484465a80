"""Where the learner publishes weights and actors pick them up between episodes."""

from __future__ import annotations

from typing import Any


class WeightHub:
    """The latest published policy (its files, see :mod:`.policy_transfer`) and its ``policy_id``.

    Kept apart from the learner, so actors go on with the last weights while a dead
    learner restarts."""

    def __init__(self) -> None:
        self.policy_id = ""
        self.step = -1
        self.files: dict[str, bytes] | None = None
        self.published = 0

    def publish(self, policy_id: str, files: dict[str, bytes], step: int) -> None:
        """Make ``files`` the current policy (an older step than the current one is ignored:
        a restarted learner republishing its checkpoint cannot roll actors back)."""
        if step < self.step:
            return
        self.policy_id, self.files, self.step = policy_id, files, int(step)
        self.published += 1

    def latest(self, known_id: str = "") -> tuple[str, dict[str, bytes]] | None:
        """The current ``(policy_id, files)``, or None when it is ``known_id`` or nothing is published."""
        if self.files is None or self.policy_id == known_id:
            return None
        return self.policy_id, self.files

    def current(self) -> dict[str, Any]:
        return {"policy_id": self.policy_id, "step": self.step, "published": self.published}
