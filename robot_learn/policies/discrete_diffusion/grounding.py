"""Auxiliary grounding loss for object-slot observations (training only).

The ``objects`` observation lists objects by colour, so only the instruction says
which slot holds the object to move and which the target. The action loss teaches
that only through the few frames where the arm approaches an object; this loss
supervises it directly. A linear head reads each slot token's final hidden state
and classifies the slot's role (:data:`ROLE_NAMES`). Labels come from the
privileged, role-ordered ``env_state`` of the same frame (its first pose is the
object to move, its second the target), so the training batch must carry
``env_state``; inference never uses it.
"""

from __future__ import annotations

import torch

ROLE_NAMES = ("move", "target", "other", "empty")
_MATCH_TOLERANCE = 1e-4  # metres: both keys are written from the same float32 poses


def slot_roles(objects: torch.Tensor, env_state: torch.Tensor, slots: int) -> torch.Tensor:
    """Role id per slot ``[B, slots]`` (indices into :data:`ROLE_NAMES`).

    ``objects`` ``[B, slots * F]`` with each slot's position first; ``env_state``
    ``[B, 14]``: (pos, quat) of the object to move, then of the target.
    """
    batch = objects.shape[0]
    items = objects.reshape(batch, slots, -1)
    position = items[..., :3]
    near_move = (position - env_state[:, None, 0:3]).norm(dim=-1) < _MATCH_TOLERANCE
    near_target = (position - env_state[:, None, 7:10]).norm(dim=-1) < _MATCH_TOLERANCE
    empty = items.abs().sum(-1) == 0
    bad = (near_move.sum(1) != 1) | (near_target.sum(1) != 1)
    if bool(bad.any()):
        row = int(bad.nonzero()[0, 0])
        raise ValueError(f"grounding labels: 'objects' and 'env_state' disagree in batch row {row} (the object to "
                         f"move and the target must each match exactly one slot); were both recorded from the same env?")
    roles = torch.full((batch, slots), ROLE_NAMES.index("other"), dtype=torch.long, device=objects.device)
    roles[empty] = ROLE_NAMES.index("empty")
    roles[near_target] = ROLE_NAMES.index("target")
    roles[near_move] = ROLE_NAMES.index("move")
    return roles
