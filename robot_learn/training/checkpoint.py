"""Checkpoint directories: atomic writes, the ``latest`` pointer, pruning and reading back.

Layout under ``out_dir/checkpoints/``::

    step_0001000/  policy/  ema/  trainer_state.pt
    latest         # one line: "step_0001000"

A checkpoint is assembled in a hidden temp dir and moved into place with
``os.replace``; only then is ``latest`` rewritten (temp file + ``os.replace``).
A process killed at any moment therefore leaves ``latest`` naming a complete
checkpoint. ``trainer_state.pt`` holds only tensors, lists, tuples, dicts, ints,
floats, bools, strings and None, so ``torch.load(weights_only=True)`` reads it;
numpy arrays (e.g. in a sampler state) are stored through :func:`encode_state`.
"""

from __future__ import annotations

import os
import re
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

CHECKPOINT_DIRNAME = "checkpoints"
LATEST_FILENAME = "latest"
STATE_FILENAME = "trainer_state.pt"
POLICY_DIRNAME = "policy"
EMA_DIRNAME = "ema"
_STEP_DIR = re.compile(r"^step_(\d{7,})$")
_ARRAY_TAG = "__ndarray__"
_NPSCALAR_TAG = "__npscalar__"


class CheckpointError(RuntimeError):
    """A checkpoint is missing, incomplete or unreadable; the message names the file."""


def step_dirname(step: int) -> str:
    """``step_0001000`` for step 1000."""
    return f"step_{step:07d}"


def encode_state(value: Any, where: str = "state") -> Any:
    """Make ``value`` loadable with ``weights_only=True``: numpy arrays/scalars become tagged tensors."""
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            raise TypeError(f"{where}: object arrays cannot go into a checkpoint")
        # Raw bytes keep any dtype (uint32, bool, ...) bit-exact.
        raw = torch.frombuffer(bytearray(np.ascontiguousarray(value).tobytes()), dtype=torch.uint8)
        return {_ARRAY_TAG: raw, "dtype": value.dtype.str, "shape": list(value.shape)}
    if isinstance(value, np.generic):
        return {_NPSCALAR_TAG: encode_state(np.asarray(value), where)}
    if isinstance(value, dict):
        return {k: encode_state(v, f"{where}[{k!r}]") for k, v in value.items()}
    if isinstance(value, list):
        return [encode_state(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, tuple):
        return tuple(encode_state(v, f"{where}[{i}]") for i, v in enumerate(value))
    if value is None or isinstance(value, (bool, int, float, str, torch.Tensor)):
        return value
    raise TypeError(
        f"{where}: cannot store a {type(value).__name__} in a checkpoint; "
        "use tensors, numpy arrays, lists, tuples, dicts, numbers or strings"
    )


def decode_state(value: Any) -> Any:
    """Inverse of :func:`encode_state`."""
    if isinstance(value, dict):
        if _ARRAY_TAG in value:
            raw = value[_ARRAY_TAG].numpy().tobytes()
            return np.frombuffer(raw, dtype=np.dtype(value["dtype"])).reshape(value["shape"]).copy()
        if _NPSCALAR_TAG in value:
            return decode_state(value[_NPSCALAR_TAG])[()]
        return {k: decode_state(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode_state(v) for v in value]
    if isinstance(value, tuple):
        return tuple(decode_state(v) for v in value)
    return value


def _fsync_dir(path: Path) -> None:
    # Makes the rename itself durable; best effort where directories cannot be opened.
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_checkpoint(
    out_dir: str | os.PathLike,
    step: int,
    write_contents: Callable[[Path], None],
    keep_last_k: int = 0,
) -> Path:
    """Atomically create ``out_dir/checkpoints/step_XXXXXXX`` and point ``latest`` at it.

    ``write_contents(tmp_dir)`` fills a temp dir (policy/, ema/, trainer_state.pt);
    it becomes visible under its final name only when complete. Older step dirs
    beyond ``keep_last_k`` (0 keeps all) are removed afterwards.
    """
    root = Path(out_dir) / CHECKPOINT_DIRNAME
    root.mkdir(parents=True, exist_ok=True)
    final = root / step_dirname(step)
    tmp = root / f".tmp_{step_dirname(step)}_{uuid.uuid4().hex[:8]}"
    write_contents(tmp)
    _fsync_dir(tmp)
    if final.exists():
        # os.replace cannot overwrite a non-empty directory: move the old one aside first.
        stale = root / f".stale_{final.name}_{uuid.uuid4().hex[:8]}"
        os.replace(final, stale)
        os.replace(tmp, final)
        shutil.rmtree(stale, ignore_errors=True)
    else:
        os.replace(tmp, final)
    _fsync_dir(root)
    pointer_tmp = root / f".{LATEST_FILENAME}.{uuid.uuid4().hex[:8]}"
    with open(pointer_tmp, "w") as f:
        f.write(final.name + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(pointer_tmp, root / LATEST_FILENAME)
    _fsync_dir(root)
    if keep_last_k > 0:
        prune_checkpoints(root, keep_last_k, protect=final.name)
    return final


def list_checkpoints(checkpoint_root: str | os.PathLike) -> list[Path]:
    """Complete step dirs (temp dirs excluded), oldest first."""
    root = Path(checkpoint_root)
    if not root.is_dir():
        return []
    found = [p for p in root.iterdir() if p.is_dir() and _STEP_DIR.match(p.name)]
    return sorted(found, key=lambda p: int(_STEP_DIR.match(p.name).group(1)))  # type: ignore[union-attr]


def prune_checkpoints(checkpoint_root: str | os.PathLike, keep_last_k: int, protect: str = "") -> None:
    """Delete all but the newest ``keep_last_k`` step dirs (never ``protect``)."""
    ckpts = list_checkpoints(checkpoint_root)
    for old in ckpts[: max(0, len(ckpts) - keep_last_k)]:
        if old.name != protect:
            shutil.rmtree(old, ignore_errors=True)


def remove_partial_checkpoints(checkpoint_root: str | os.PathLike) -> None:
    """Remove temp dirs left behind by a process killed while checkpointing."""
    root = Path(checkpoint_root)
    if not root.is_dir():
        return
    for p in root.iterdir():
        if p.name.startswith((".tmp_", ".stale_")):
            shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)
        elif p.name.startswith(f".{LATEST_FILENAME}."):
            p.unlink(missing_ok=True)


def find_latest_checkpoint(out_dir: str | os.PathLike) -> Path | None:
    """The checkpoint dir named by ``latest``, or None when there is no checkpoint.

    If ``latest`` is absent but step dirs exist (killed between the move and the
    pointer update), the newest step dir is used. A ``latest`` pointing at a
    missing directory raises :class:`CheckpointError`.
    """
    root = Path(out_dir) / CHECKPOINT_DIRNAME
    pointer = root / LATEST_FILENAME
    if pointer.exists():
        name = pointer.read_text().strip()
        if not _STEP_DIR.match(name):
            raise CheckpointError(f"checkpoint pointer {pointer} is corrupt: expected 'step_XXXXXXX', found {name!r}")
        target = root / name
        if not target.is_dir():
            raise CheckpointError(f"checkpoint pointer {pointer} names {target}, which does not exist")
        return target
    ckpts = list_checkpoints(root)
    return ckpts[-1] if ckpts else None


def load_trainer_state(ckpt_dir: str | os.PathLike) -> dict[str, Any]:
    """Read ``trainer_state.pt`` with ``weights_only=True``; errors name the file."""
    path = Path(ckpt_dir) / STATE_FILENAME
    if not path.is_file():
        raise CheckpointError(f"checkpoint file missing: {path}")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # unpickling/zip errors come in many types
        # Only the first line: torch's weights-only unpickling errors run to paragraphs.
        reason = (str(exc).strip().splitlines() or [""])[0]
        raise CheckpointError(f"checkpoint file is corrupt or unreadable: {path} ({type(exc).__name__}: {reason}); "
                              "resuming needs an intact checkpoint, or start a fresh run in another directory") from exc
    if not isinstance(state, dict) or "step" not in state:
        raise CheckpointError(f"checkpoint file is corrupt: {path} holds no trainer state (no 'step' entry)")
    return state


def checkpoint_step(ckpt_dir: str | os.PathLike) -> int:
    """The step of a checkpoint dir, from its name (``step_0001000`` -> 1000)."""
    match = _STEP_DIR.match(Path(ckpt_dir).name)
    if match is None:
        raise CheckpointError(f"{ckpt_dir} is not a checkpoint dir (expected a name like 'step_0001000')")
    return int(match.group(1))


def check_resume_steps(out_dir: str | os.PathLike, steps: int, key: str = "steps") -> int | None:
    """The step a run in ``out_dir`` would resume from (None: no checkpoint, a fresh start).

    A target ``steps`` below that step would train nothing, silently: ValueError
    naming ``key``. Reads only the checkpoint's name, so it is cheap to call before
    any work starts.
    """
    ckpt = find_latest_checkpoint(out_dir)
    if ckpt is None:
        return None
    step = checkpoint_step(ckpt)
    if steps < step:
        raise ValueError(f"{key}={steps} is below the step of the checkpoint this run resumes from (step {step}, "
                         f"{ckpt}), so nothing would be trained; set {key} above {step} to train on, or start a "
                         f"fresh run in another directory")
    return step


def config_differences(saved: Any, current: Any, ignore: frozenset[str] = frozenset()) -> list[str]:
    """``"name: saved X, now Y"`` for each field where two config dataclasses differ,
    leaving out the fields in ``ignore``."""
    import dataclasses

    if type(saved) is not type(current):
        return [f"policy config: saved {type(saved).__name__}, now {type(current).__name__}"]
    old, new = dataclasses.asdict(saved), dataclasses.asdict(current)
    return [f"{k}: saved {old[k]!r}, now {new[k]!r}" for k in old if k not in ignore and old[k] != new.get(k)]
