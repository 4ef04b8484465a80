"""Reading a checkpoint's ``config.yaml``, shared by policy and world-model checkpoints.

Each kind of checkpoint has its own load-error type and its own rule for what the
document must hold, so both come in as arguments; the reading and the one-line
messages for a missing file or bad YAML are written once, here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml


def read_checkpoint_yaml(config_path: Path, error: type[Exception], *, kind: str,
                         problem: Callable[[Any], str | None]) -> dict[str, Any]:
    """The parsed ``config_path`` of a ``kind`` checkpoint (``"policy"``, ``"world model"``).

    Raises ``error`` with a one-line message when the file is missing, is not YAML, or
    when ``problem(document)`` says what is wrong with it (a text that follows the
    file name, e.g. ``"must be a mapping with 'type' and 'config'"``). ``problem``
    must return a text for anything that is not a mapping.
    """
    if not config_path.is_file():
        raise error(f"{kind} checkpoint {config_path.parent} has no {config_path.name}")
    try:
        document = yaml.safe_load(config_path.read_text())
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise error(f"{config_path} is not valid YAML: {exc}") from None
    if (text := problem(document)) is not None:
        raise error(f"{config_path} {text}")
    if not isinstance(document, dict):  # a ``problem`` that forgot the top-level type
        raise error(f"{config_path} must be a mapping, not {type(document).__name__}")
    return document
