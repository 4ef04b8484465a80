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


def robot_settings_for_policy(robot_cfg: Any, policy: Any) -> dict[str, Any]:
    """Overrides for a ``robot`` config node so that the robot renders what a loaded ``policy``
    reads: the policy's cameras added to the robot's (the robot's own first), at the policy's
    frame size. The node's defaults follow the ``policy`` group, not a saved ``policy_dir``,
    so a pixel policy loaded with the default group would otherwise meet a robot without
    cameras. Empty for a robot config without cameras or a policy that reads none."""
    from omegaconf import OmegaConf

    from robot_learn.cli.hydra_app import observed_cameras
    from robot_learn.evaluation.rollout import policy_cameras

    cameras, size = policy_cameras(policy)
    if not cameras or "cameras" not in robot_cfg:
        return {}
    own = list(OmegaConf.to_container(robot_cfg, resolve=True).get("cameras") or [])
    out: dict[str, Any] = {"cameras": observed_cameras(own, cameras)}
    if "image_size" in robot_cfg:
        out["image_size"] = size
    changed = {k: v for k, v in out.items() if OmegaConf.select(robot_cfg, k) != v}
    if changed:
        print("robot: " + ", ".join(f"{k} {v}" for k, v in changed.items()) + " (what the policy reads)")
    return out
