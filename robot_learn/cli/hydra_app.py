"""Running a Hydra app as a ``robot-learn`` subcommand, with clear error exits."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable, Sequence

import hydra
from omegaconf import DictConfig, OmegaConf

# "../../configs" relative to this file: <repo>/configs for the editable install.
# Made absolute because Hydra resolves a relative path against the calling
# *module* (pkg://configs) when the app is not run as a script.
CONFIG_PATH = str((Path(__file__).resolve().parent / "../../configs").resolve())


def demo_store_path(task: str, cameras: Sequence[str], image_size: int) -> str:
    """Default demo store of a task: ``data/<task>_demos.zarr`` for state-only demos,
    ``data/<task>_demos_<cam>_<cam>_<size>.zarr`` when images are recorded."""
    cams = list(cameras or [])
    suffix = "_" + "_".join([*map(str, cams), str(image_size)]) if cams else ""
    return f"data/{task}_demos{suffix}.zarr"


# Hydra configs refer to it as ${demo_store_path:task,cameras,image_size}.
if not OmegaConf.has_resolver("demo_store_path"):
    OmegaConf.register_new_resolver("demo_store_path", demo_store_path)


class CLIError(Exception):
    """A user-facing error: printed as one line without a traceback, exit status 2."""


def run_hydra_app(task_fn: Callable[[DictConfig], int | None], config_name: str,
                  argv: Sequence[str], prog: str) -> int:
    """Run ``task_fn`` as a Hydra app on ``argv`` (key=value overrides).

    Hydra reads ``sys.argv``, so it is swapped for the call. ``CLIError`` and
    ``ValueError`` raised by ``task_fn`` become ``prog: error: ...`` on stderr and
    exit status 2; Hydra's own errors (bad override, unknown config option)
    keep Hydra's message and its exit status 1.
    """
    status = {"code": 0}

    def wrapped(cfg: DictConfig) -> None:
        try:
            status["code"] = int(task_fn(cfg) or 0)
        except (CLIError, ValueError, FileNotFoundError) as err:
            print(f"{prog}: error: {err}", file=sys.stderr)
            # SystemExit is not an Exception, so Hydra lets it through untouched.
            raise SystemExit(2) from None

    app = hydra.main(config_path=CONFIG_PATH, config_name=config_name,
                     version_base="1.3")(wrapped)
    saved = sys.argv
    sys.argv = [prog, *argv]
    try:
        app()
    finally:
        sys.argv = saved
    return status["code"]
