"""Running a Hydra app as a ``robot-learn`` subcommand, under the CLI error rule."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

import hydra
from omegaconf import DictConfig, OmegaConf

from robot_learn.cli.errors import CLIError, run_command
from robot_learn.cli.tasks import register_external_task_configs

__all__ = ["CLIError", "CONFIG_PATH", "demo_store_path", "missing_settings", "observed_cameras", "run_hydra_app"]

# "../../configs" relative to this file: <repo>/configs for the editable install.
# Made absolute because Hydra resolves a relative path against the calling
# *module* (pkg://configs) when the app is not run as a script.
CONFIG_PATH = str((Path(__file__).resolve().parent / "../../configs").resolve())


def demo_store_path(task: str, cameras: Sequence[str], image_size: int, start_spread: str = "wide") -> str:
    """Default demo store of a task: ``data/<task>_demos.zarr`` for state-only demos,
    ``data/<task>_demos_<cam>_<cam>_<size>.zarr`` when images are recorded; demos from
    a start spread other than ``wide`` end in ``_<spread>`` (``data/stack_demos_narrow.zarr``),
    so they never mix with the default ones."""
    cams = list(cameras or [])
    suffix = "_" + "_".join([*map(str, cams), str(image_size)]) if cams else ""
    spread = "" if str(start_spread) == "wide" else f"_{start_spread}"
    return f"data/{task}_demos{suffix}{spread}.zarr"


def world_model_store_path(task: str, camera: str, extra_cameras: Sequence[str], image_size: int) -> str:
    """Default store of ``wm train``: ``data/wm/<task>_<camera>[_<extra>...]_<size>.zarr``
    (``data/wm/bin_place_front_64.zarr``; with the wrist camera too ``..._front_wrist_64.zarr``)."""
    return f"data/wm/{task}_{'_'.join([str(camera), *map(str, extra_cameras or [])])}_{image_size}.zarr"


def observed_cameras(camera_names: Sequence[str], encoder_cameras: Sequence[str]) -> list[str]:
    """Cameras a policy reads: its own plus its frame encoder's (pixel presets)."""
    return list(dict.fromkeys([*map(str, camera_names or []), *map(str, encoder_cameras or [])]))


# Hydra configs refer to them as ${demo_store_path:task,cameras,image_size[,start_spread]},
# ${world_model_store_path:task,camera,extra_cameras,image_size} and ${observed_cameras:camera_names,encoder_cameras}.
for _name, _resolver in (("demo_store_path", demo_store_path), ("world_model_store_path", world_model_store_path),
                         ("observed_cameras", observed_cameras)):
    if not OmegaConf.has_resolver(_name):
        OmegaConf.register_new_resolver(_name, _resolver)


def missing_settings(cfg: DictConfig) -> list[str]:
    """Keys of ``cfg`` still set to ``???`` (required on the command line)."""
    return sorted(OmegaConf.missing_keys(cfg))


def _required_groups(config_name: str) -> dict[str, list[str]]:
    """Config groups that ``config_name``'s defaults leave as ``???``, with their options."""
    import yaml

    root = Path(CONFIG_PATH)
    defaults = yaml.safe_load((root / f"{config_name}.yaml").read_text()).get("defaults", [])
    groups = [next(iter(d)) for d in defaults if isinstance(d, dict) and next(iter(d.values())) == "???"]
    return {g: sorted(p.stem for p in (root / g).glob("*.yaml")) for g in groups}


def _help_overrides(config_name: str, argv: Sequence[str]) -> list[str]:
    """For ``--help``: a placeholder choice for each required group the user left out,
    so Hydra can show the config instead of failing on the missing choice."""
    extra = []
    for group, options in _required_groups(config_name).items():
        if options and not any(a.split("=", 1)[0].lstrip("+~") == group for a in argv):
            print(f"note: {group}=... is required (choices: {', '.join(options)}); "
                  f"the config below shows {group}={options[0]}\n")
            extra.append(f"{group}={options[0]}")
    return extra


def run_hydra_app(task_fn: Callable[[DictConfig], int | None], config_name: str,
                  argv: Sequence[str], prog: str) -> int:
    """Run ``task_fn`` as a Hydra app on ``argv`` (key=value overrides); returns the exit status.

    Hydra reads ``sys.argv``, so it is swapped for the call. Errors, Hydra's own
    included (a bad override, an unknown config option, a required setting left
    out), follow the CLI rule of :func:`robot_learn.cli.errors.run_command`: one line
    and exit status 2 for a user's mistake.
    """
    return run_command(prog, _run_hydra_app, argv, task_fn, config_name, prog)


def _run_hydra_app(argv: list[str], task_fn: Callable[[DictConfig], int | None], config_name: str,
                   prog: str) -> int:
    status: dict[str, Any] = {"code": 0, "error": None}

    def wrapped(cfg: DictConfig) -> None:
        # Kept from Hydra, which would print its own "Error executing job" line first;
        # re-raised below.
        try:
            missing = missing_settings(cfg)
            if missing:
                raise CLIError(f"missing required setting{'s' * (len(missing) > 1)} {', '.join(missing)}; "
                               f"give {' '.join(f'{k}=...' for k in missing)} on the command line")
            status["code"] = int(task_fn(cfg) or 0)
        except Exception as err:
            status["error"] = err

    register_external_task_configs(argv, CONFIG_PATH)  # task=metaworld/<any v3 task>, no YAML needed
    if any(a in ("-h", "--help") for a in argv):
        argv = [*argv, *_help_overrides(config_name, argv)]
    app = hydra.main(config_path=CONFIG_PATH, config_name=config_name,
                     version_base="1.3")(wrapped)
    saved_argv, saved_full_error = sys.argv, os.environ.get("HYDRA_FULL_ERROR")
    sys.argv = [prog, *argv]
    # Hydra then re-raises errors (instead of printing its own multi-line report and
    # exiting 1), so run_command can apply the one-line rule to them too.
    os.environ["HYDRA_FULL_ERROR"] = "1"
    try:
        app()
    finally:
        sys.argv = saved_argv
        if saved_full_error is None:
            os.environ.pop("HYDRA_FULL_ERROR", None)
        else:
            os.environ["HYDRA_FULL_ERROR"] = saved_full_error
    if status["error"] is not None:
        raise status["error"]
    return status["code"]
