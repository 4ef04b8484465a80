"""A GRPO round that a kill interrupts resumes at its next iteration, not at its start.

After every iteration the round writes ``round_dir/grpo_progress/checkpoints/step_XXXXXXX``
(atomically, as the trainer's checkpoints): the policy's weights, the optimiser's state,
the iterations' logs, how many episodes the round's store held, and the round's settings.
A rerun of the round loads the latest one, cuts the store back to those episodes (a kill
mid-iteration leaves that iteration's finished groups in it, and the iteration is rolled
again), and goes on. Every rollout and update is seeded by its iteration, so the resumed
round ends with the weights an uninterrupted one would have. A checkpoint written under
other settings is refused with the keys that differ.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from robot_learn.training.checkpoint import (
    CheckpointError,
    find_latest_checkpoint,
    remove_partial_checkpoints,
    write_checkpoint,
)

PROGRESS_DIRNAME = "grpo_progress"
_STATE = "progress.pt"


@dataclass
class GRPOProgress:
    """What the last finished iteration left: weights dir, optimiser state, logs, episodes."""

    policy_dir: Path
    optimizer: dict[str, Any]
    history: list[dict[str, Any]]
    episodes: int


def save_progress(round_dir: Path, policy: Any, optimizer: torch.optim.Optimizer, history: list[dict[str, Any]],
                  episodes: int, settings: dict[str, Any]) -> Path:
    """Checkpoint the round after ``len(history)`` iterations (only the newest is kept)."""
    state = {"optimizer": optimizer.state_dict(), "history": history, "episodes": int(episodes),
             "settings": settings}

    def contents(tmp: Path) -> None:
        tmp.mkdir(parents=True)
        policy.save(tmp / "policy")
        with open(tmp / _STATE, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())

    return write_checkpoint(round_dir / PROGRESS_DIRNAME, len(history), contents, keep_last_k=1)


def load_progress(round_dir: Path, settings: dict[str, Any]) -> GRPOProgress | None:
    """The latest iteration checkpoint of the round, or None; ValueError when it was
    written under other ``settings`` (naming each key that differs)."""
    root = round_dir / PROGRESS_DIRNAME
    remove_partial_checkpoints(root / "checkpoints")
    latest = find_latest_checkpoint(root)
    if latest is None:
        return None
    path = latest / _STATE
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
        saved_settings, history = state["settings"], list(state["history"])
    except Exception as exc:  # a missing or damaged file, in any of torch's error types
        reason = (str(exc).strip().splitlines() or [""])[0]
        raise CheckpointError(f"GRPO round checkpoint {path} is missing or corrupt ({type(exc).__name__}: {reason}); "
                              f"remove {root} to redo the round from its start") from exc
    saved = json.loads(json.dumps(saved_settings, default=str))
    wanted = json.loads(json.dumps(settings, default=str))
    changed = [f"{k}: {saved.get(k)!r} then, {wanted.get(k)!r} now" for k in sorted(set(saved) | set(wanted))
               if saved.get(k) != wanted.get(k)]
    if changed:
        raise ValueError(f"{latest} holds a GRPO round begun with other settings ({'; '.join(changed)}); rerun "
                         f"with those settings to resume it, or start the run in another run_dir")
    return GRPOProgress(latest / "policy", state["optimizer"], history, int(state["episodes"]))


def clear_progress(round_dir: Path) -> None:
    """Remove the round's iteration checkpoints (once its policy is saved)."""
    shutil.rmtree(round_dir / PROGRESS_DIRNAME, ignore_errors=True)


def keep_first_episodes(path: Path, episodes: int) -> None:
    """Cut the store at ``path`` back to its first ``episodes`` episodes (``EpisodeStore.truncate``:
    one new commit record, nothing copied). ValueError when it holds fewer than that."""
    from robot_learn.data import EpisodeStore

    with EpisodeStore.open(path, mode="a") as store:
        if store.num_episodes < episodes:
            raise ValueError(f"{path} holds {store.num_episodes} episodes, fewer than the {episodes} its GRPO round "
                             f"checkpoint recorded; remove {path.parent / PROGRESS_DIRNAME} to redo the round from "
                             f"its start")
        store.truncate(episodes)
