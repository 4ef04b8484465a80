"""Finding and loading the policy in a checkpoint, run or policy directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from robot_learn.cli.errors import CLIError


def resolve_policy_dir(path: str | Path) -> Path:
    """:func:`robot_learn.policies.checkpoint.resolve_policy_dir`, its error a CLIError."""
    from robot_learn.policies.checkpoint import PolicyLoadError
    from robot_learn.policies.checkpoint import resolve_policy_dir as resolve

    try:
        return resolve(path)
    except PolicyLoadError as err:
        raise CLIError(str(err)) from None


def load_policy_for_task(checkpoint: str | Path, task: str, *, cameras: tuple[str, ...],
                         image_size: int | None, expected_type: str | None = None,
                         device: str = "cpu") -> Any:
    """Load the policy at ``checkpoint`` and check it fits ``task``'s action and observations,
    rendered at ``image_size`` (None: the size of the policy's own camera inputs, 96 for a
    policy that reads none).

    Raises ``CLIError`` naming the checkpoint and the mismatch.
    """
    from robot_learn.envs import make_env
    from robot_learn.evaluation import observation_shapes
    from robot_learn.evaluation.rollout import policy_cameras
    from robot_learn.policies import check_compatible, load_policy

    policy_dir = resolve_policy_dir(checkpoint)
    try:
        policy = load_policy(policy_dir, expected_type, device=device)
        size = image_size or policy_cameras(policy)[1] or 96
        env = make_env(task, cameras=cameras, image_size=size)
        try:
            action_dim = int(env.action_space.shape[0])
            shapes = observation_shapes(env.observation_space)
        finally:
            env.close()
        check_compatible(policy, action_dim=action_dim, obs_shapes=shapes)
        return policy
    except ValueError as err:  # PolicyLoadError / IncompatiblePolicyError
        raise CLIError(f"cannot evaluate checkpoint '{checkpoint}' on task '{task}': {err}") from None
