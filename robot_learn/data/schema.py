"""What an episode may contain: per-step keys, their canonical dtypes and the
per-episode metadata fields, with the checks that turn bad input into a clear
`StoreError` before anything is written."""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any, Mapping

import numpy as np

from robot_learn.data.errors import StoreError

SOURCES: tuple[str, ...] = (
    "demo", "rollout", "intervention", "reversed", "guided", "synthetic", "teleop",
)

# Per-step keys with a fixed meaning: (dtype kind accepted, stored dtype, per-step ndim).
# Float inputs of any width are stored as float32: every producer (envs, hardware,
# world models) agrees on one dtype, so stores written by different tools merge.
# The exception is `timestamp` (wall-clock seconds since the epoch): float32 would
# round it to minutes, so it is stored as float64.
_VECTOR_KEYS = ("state", "env_state", "objects", "action", "policy_action")
_SCALAR_FLOAT_KEYS = ("reward", "progress")
STEP_KEYS: tuple[str, ...] = (
    "state", "env_state", "objects", "images/<camera>", "action", "policy_action",
    "intervention", "reward", "progress", "phase", "timestamp",
)
_CAMERA_RE = re.compile(r"^images/[A-Za-z0-9_\-]+$")

# Per-episode fields: name -> (stored dtype, default). A default of None means required.
META_FIELDS: dict[str, tuple[str, Any]] = {
    "task": ("str", None),
    "instruction": ("str", None),
    "success": ("bool", None),
    "seed": ("int64", None),
    "source": ("str", None),
    "round": ("int64", 0),
    "policy_id": ("str", ""),
    "operator": ("str", ""),
    "created": ("str", ""),  # filled in with the current UTC time when empty
}


def key_spec(key: str) -> tuple[str, str, int]:
    """(accepted dtype kinds, stored dtype, per-step ndim) for a per-step key.

    Raises StoreError for an unknown key, listing the valid ones."""
    if key in _VECTOR_KEYS:
        return "f", "float32", 1
    if key in _SCALAR_FLOAT_KEYS:
        return "f", "float32", 0
    if key == "phase":
        return "iu", "int64", 0
    if key == "intervention":
        return "b", "bool", 0
    if key == "timestamp":
        return "f", "float64", 0
    if _CAMERA_RE.match(key):
        return "u", "uint8", 3
    raise StoreError(f"unknown step key {key!r}; valid keys: {', '.join(STEP_KEYS)}")


def validate_steps(
    steps: Mapping[str, Any], schema: Mapping[str, Mapping[str, Any]] | None
) -> tuple[int, dict[str, np.ndarray], dict[str, dict[str, Any]]]:
    """Check an episode's steps against the store schema (or fix a new schema).

    Returns (T, arrays cast to their stored dtype, schema). `schema` maps each key
    to {"dtype": str, "shape": per-step shape list}; None means no episode yet."""
    if not isinstance(steps, Mapping) or not steps:
        raise StoreError("an episode needs a non-empty dict of per-step arrays; got "
                         f"{type(steps).__name__} {steps!r:.60}")
    if "action" not in steps:
        raise StoreError(f"episode has no 'action' key; got keys {sorted(steps)}")
    if schema is not None:
        missing = sorted(set(schema) - set(steps))
        extra = sorted(set(steps) - set(schema))
        if missing or extra:
            raise StoreError(
                f"episode keys do not match the store: missing {missing}, unexpected {extra}; "
                f"store keys: {sorted(schema)}")
    arrays: dict[str, np.ndarray] = {}
    lengths: dict[str, int] = {}
    new_schema: dict[str, dict[str, Any]] = {}
    for key in sorted(steps):
        kinds, stored, ndim = key_spec(key)
        arr = np.asarray(steps[key])
        if arr.ndim != ndim + 1:
            raise StoreError(f"step key {key!r}: expected {ndim + 1} dims (T first), "
                             f"got shape {arr.shape}")
        if arr.dtype.kind not in kinds:
            raise StoreError(f"step key {key!r}: expected dtype {stored} "
                             f"(kind {kinds!r}), got {arr.dtype}")
        if stored == "uint8" and (arr.dtype != np.uint8 or arr.shape[-1] != 3):
            raise StoreError(f"step key {key!r}: images must be uint8 T×H×W×3, "
                             f"got {arr.dtype} {arr.shape}")
        if schema is not None:
            want = tuple(schema[key]["shape"])
            if arr.shape[1:] != want or stored != schema[key]["dtype"]:
                raise StoreError(
                    f"step key {key!r}: expected per-step shape {want} dtype "
                    f"{schema[key]['dtype']}, got shape {arr.shape[1:]} dtype {arr.dtype}")
        lengths[key] = arr.shape[0]
        arrays[key] = np.ascontiguousarray(arr, dtype=stored)
        new_schema[key] = {"dtype": stored, "shape": list(arr.shape[1:])}
    if len(set(lengths.values())) != 1:
        raise StoreError(f"steps have different lengths: {lengths}")
    length = next(iter(lengths.values()))
    if length == 0:
        raise StoreError("episode is empty (T=0); an episode needs at least one step")
    return length, arrays, (dict(schema) if schema is not None else new_schema)


def validate_meta(meta: Mapping[str, Any]) -> dict[str, Any]:
    """Check per-episode metadata and fill in defaults; returns plain Python values."""
    if not isinstance(meta, Mapping):
        raise StoreError(f"episode meta must be a dict, got {type(meta).__name__}")
    unknown = sorted(set(meta) - set(META_FIELDS))
    if unknown:
        raise StoreError(f"unknown meta fields {unknown}; valid fields: {', '.join(META_FIELDS)}")
    row: dict[str, Any] = {}
    for name, (dtype, default) in META_FIELDS.items():
        if name not in meta:
            if default is None:
                raise StoreError(f"episode meta is missing required field {name!r}; "
                                 f"required: task, instruction, success, seed, source")
            row[name] = default
            continue
        value = meta[name]
        if dtype == "str" and not isinstance(value, str):
            raise StoreError(f"meta field {name!r} must be a str, got {value!r}")
        if dtype == "bool" and not isinstance(value, (bool, np.bool_)):
            raise StoreError(f"meta field {name!r} must be a bool, got {value!r}")
        if dtype == "int64" and (isinstance(value, (bool, np.bool_))
                                 or not isinstance(value, (int, np.integer))):
            raise StoreError(f"meta field {name!r} must be an int, got {value!r}")
        row[name] = {"str": str, "bool": bool, "int64": int}[dtype](value)
    check_source(row["source"])
    if not row["created"]:
        row["created"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    return row


def check_source(source: str) -> None:
    """Raise StoreError unless `source` is one of SOURCES."""
    if source not in SOURCES:
        raise StoreError(f"unknown source {source!r}; valid sources: {', '.join(SOURCES)}")
