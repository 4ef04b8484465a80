"""Arms by name, so the CLI and configs pick one without importing it by name."""

from __future__ import annotations

from typing import Any, Callable

from robot_learn.hardware.arm import ServoArm
from robot_learn.hardware.koch import koch_follower, koch_leader
from robot_learn.hardware.so101 import so101_follower, so101_leader

ROBOTS: dict[str, Callable[..., ServoArm]] = {
    "so101_follower": so101_follower,
    "so101_leader": so101_leader,
    "koch_follower": koch_follower,
    "koch_leader": koch_leader,
}


def make_arm(robot_type: str, port: str, **kwargs: Any) -> ServoArm:
    """Build an arm by type name; unknown names list the valid ones."""
    try:
        factory = ROBOTS[robot_type]
    except KeyError:
        raise ValueError(f"unknown robot {robot_type!r}; valid robots: {', '.join(ROBOTS)}") from None
    return factory(port, **kwargs)
