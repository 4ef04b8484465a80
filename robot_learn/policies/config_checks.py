"""Checks shared by the policy configs: each raises ``ValueError`` naming the bad
setting, its value and what would be valid.

Both policy configs (continuous and discrete diffusion) describe the same
receding-horizon contract of :class:`~robot_learn.policies.Policy` (observe
``obs_horizon`` steps, predict ``action_horizon`` actions, execute
``execute_horizon`` of them), so they validate it with the same words.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def check_choice(name: str, value: str, valid: tuple[str, ...]) -> None:
    """Refuse ``value`` unless it is one of ``valid``: "unknown <name> '<value>'; valid choices: ..."."""
    if value not in valid:
        raise ValueError(f"unknown {name} '{value}'; valid choices: {', '.join(valid)}")


def check_at_least(config: Any, names: Iterable[str], minimum: float) -> None:
    """Refuse any of ``config``'s fields ``names`` below ``minimum``: "<name> must be >= <minimum>, got ..."."""
    for name in names:
        value = getattr(config, name)
        if value < minimum:
            raise ValueError(f"{name} must be >= {minimum}, got {value}")


def check_observes_something(config: Any) -> None:
    """Refuse a config with neither low-dim keys (``state_dims``) nor cameras."""
    if not config.state_dims and not config.camera_names:
        raise ValueError(
            f"{type(config).__name__} needs state_dims or camera_names (the policy must observe something)"
        )


def check_execution_fits_chunk(config: Any) -> None:
    """Refuse horizons whose executed actions would run past the predicted chunk.

    ``select_action`` executes chunk indices ``obs_horizon - 1 .. obs_horizon - 2 + execute_horizon``.
    """
    if config.obs_horizon - 1 + config.execute_horizon > config.action_horizon:
        raise ValueError(
            f"obs_horizon - 1 + execute_horizon must be <= action_horizon (the executed actions start at the "
            f"current step, index obs_horizon - 1); got {config.obs_horizon} - 1 + {config.execute_horizon} "
            f"> {config.action_horizon}"
        )
