"""A demo collection killed part way loses nothing and leaves no store that a later run
would take for complete: the episodes go to ``<store>.partial``, which becomes the store
only when the collection ends, and a later run deletes the leftover and collects anew."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from tests.cli.conftest import _command

from robot_learn.data import EpisodeStore
from robot_learn.data.errors import StoreError
from robot_learn.envs.demos import collect_demos, staged_store


def _stored_episodes(store):
    try:
        return json.loads((store / "episode_store.json").read_text())["num_episodes"]
    except (OSError, ValueError, KeyError):
        return 0


def test_a_killed_collection_leaves_no_store_and_the_next_run_starts_over(tmp_path):
    store = tmp_path / "demos.zarr"
    partial = tmp_path / "demos.zarr.partial"
    # robot-learn train collects the missing store first; it is killed while collecting.
    proc = subprocess.Popen([*_command(), "train", "task=stack", "policy=diffusion_state", "data.episodes=500",
                             f"data.path={store}"], cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    try:
        deadline = time.monotonic() + 120
        while _stored_episodes(partial) < 2 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        assert proc.poll() is None, f"train exited before it was killed: {proc.stderr.read()}"
        assert _stored_episodes(partial) >= 2, "no episodes reached the staging store in 120 s"
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    assert not store.exists() and partial.exists()

    # The next collection into the same path deletes the leftover and starts from seed 0.
    with staged_store(store) as staging:
        assert staging == partial and not partial.exists()
        collect_demos("stack", 2, staging, cameras=(), progress_bar=False)
    assert not partial.exists()
    demos = EpisodeStore.open(store, mode="r")
    assert demos.num_episodes == 2
    assert sorted(int(s) for s in demos.meta["seed"]) == [0, 1]


def test_a_failed_collection_is_not_moved_into_place(tmp_path):
    store = tmp_path / "demos.zarr"
    try:
        with staged_store(store) as staging:
            collect_demos("stack", 1, staging, cameras=(), progress_bar=False)
            raise RuntimeError("stopped")
    except RuntimeError:
        pass
    assert not store.exists() and (tmp_path / "demos.zarr.partial").exists()


def test_a_collection_still_running_is_not_deleted_by_another(tmp_path):
    """Two runs that both find the store missing: the second must not delete the first's
    staging store while it is being written, and says who holds it (from the CLI: one
    line, exit status 2, no traceback)."""
    partial = tmp_path / "demos.zarr.partial"
    writer = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom robot_learn.data import EpisodeStore\n"
                               f"s = EpisodeStore.create({str(partial)!r}); print('open', flush=True); time.sleep(600)"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "open"
        with pytest.raises(StoreError, match=f"is open for appending by another process \\(pid {writer.pid}\\)"):
            with staged_store(tmp_path / "demos.zarr"):
                pass
        cli = subprocess.run([*_command(), "train", "task=stack", "policy=diffusion_state",
                              f"data.path={tmp_path / 'demos.zarr'}"], cwd=tmp_path, capture_output=True, text=True,
                             env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=300)
        assert cli.returncode == 2, cli.stderr
        lines = cli.stderr.strip().splitlines()
        assert len(lines) == 1 and f"pid {writer.pid}" in lines[0] and "Traceback" not in cli.stderr, cli.stderr
        assert partial.exists() and EpisodeStore.open(partial, mode="r").num_episodes == 0
    finally:
        writer.kill()
        writer.wait()
