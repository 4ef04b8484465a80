"""Policies as files in memory, so weights travel through Ray's object store.

A policy goes as the files :meth:`Policy.save` writes (config YAML + safetensors, no
pickle) and comes back through :func:`~robot_learn.policies.load_policy`, so an actor
on another machine needs no shared disk with the learner.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any


def policy_to_files(policy: Any) -> dict[str, bytes]:
    """The files of ``policy.save(dir)``, by name."""
    with tempfile.TemporaryDirectory(prefix="fleet_policy_") as tmp:
        policy.save(tmp)
        return {p.name: p.read_bytes() for p in Path(tmp).iterdir() if p.is_file()}


def policy_from_files(files: dict[str, bytes]) -> Any:
    """The policy whose saved files are ``files`` (see :func:`policy_to_files`), in eval mode."""
    from robot_learn.policies import load_policy

    with tempfile.TemporaryDirectory(prefix="fleet_policy_") as tmp:
        for name, data in files.items():
            (Path(tmp) / name).write_bytes(data)
        return load_policy(tmp)
