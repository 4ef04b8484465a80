"""Two ``robot-learn collect`` processes on one store: with ``wait=true`` both succeed,
one after the other; without it each either succeeds or gets the one-line lock
error. Either way every stored episode is exactly the episode of its seed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from robot_learn.data import EpisodeStore

MAX_STEPS = 30  # short episodes; failures are kept so every seed is stored
SEEDS = (0, 100)
EPISODES = 3


def start_collect(cwd: Path, seed: int, *extra: str) -> subprocess.Popen:
    script = Path(sys.executable).with_name("robot-learn")
    return subprocess.Popen(
        [str(script), "collect", "task=stack", f"episodes={EPISODES}", f"seed={seed}", "out=shared.zarr",
         "cameras=[]", f"max_steps={MAX_STEPS}", "keep_failures=true", f"hydra.run.dir=run_{seed}", *extra],
        cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "MUJOCO_GL": "egl", "OMP_NUM_THREADS": "1"})


def finish(procs: list[subprocess.Popen]) -> list[tuple[int, str, str]]:
    """(exit status, stdout, stderr) of each process, once it has ended."""
    outs = [p.communicate(timeout=600) for p in procs]
    return [(p.returncode, out, err) for p, (out, err) in zip(procs, outs)]


def check_every_episode_matches_its_seed(path: Path) -> list[int]:
    """Re-record each stored seed with the same expert and compare every array."""
    from robot_learn.envs.demos import record_demo_episode
    from robot_learn.envs import make_env, make_expert

    store = EpisodeStore.open(path)
    env = make_env("stack", cameras=(), max_steps=MAX_STEPS)
    seeds = [int(s) for s in store.meta["seed"]]
    try:
        for i, seed in enumerate(seeds):
            steps, _meta = record_demo_episode(env, make_expert("stack", noise=0.0, seed=seed), seed)
            stored = store.episode(i)["steps"]
            for key, values in steps.items():
                np.testing.assert_array_equal(stored[key], values.astype(stored[key].dtype),
                                              err_msg=f"episode {i} (seed {seed}) {key}")
    finally:
        env.close()
    return seeds


def test_two_collects_with_wait_both_store_all_their_episodes(tmp_path):
    results = finish([start_collect(tmp_path, seed, "wait=true") for seed in SEEDS])
    for code, out, err in results:
        assert code == 0, err
        assert f"{EPISODES} stored" in out
    seeds = check_every_episode_matches_its_seed(tmp_path / "shared.zarr")
    runs = [list(range(s, s + EPISODES)) for s in SEEDS]
    assert seeds in (runs[0] + runs[1], runs[1] + runs[0])  # one writer after the other


def test_two_collects_without_wait_never_mix_episodes(tmp_path):
    results = finish([start_collect(tmp_path, seed) for seed in SEEDS])
    stored = []
    for seed, (code, out, err) in zip(SEEDS, results):
        if code == 0:
            stored += list(range(seed, seed + EPISODES))
        else:  # lost the race for the writer lock
            assert code == 2 and "Traceback" not in err, err
            assert "shared.zarr' is open for appending by another process (pid " in err
    assert stored, "at least the first writer succeeds"
    assert sorted(check_every_episode_matches_its_seed(tmp_path / "shared.zarr")) == sorted(stored)


def test_collect_into_a_store_held_by_another_writer_is_a_clear_error(tmp_path):
    with EpisodeStore.create(tmp_path / "shared.zarr"):
        (code, _out, err), = finish([start_collect(tmp_path, 0)])
    assert code == 2 and "Traceback" not in err
    assert f"is open for appending by another process (pid {os.getpid()})" in err and "wait=true" in err


def test_collect_with_wait_queues_behind_the_writer_holding_the_store(tmp_path):
    holder = EpisodeStore.create(tmp_path / "shared.zarr")
    proc = start_collect(tmp_path, 0, "wait=true")
    waiting = proc.stdout.readline()  # its first line (Hydra logs to stdout), once it finds the store held
    assert f"(pid {os.getpid()}); waiting for it to finish" in waiting
    holder.close()
    (code, out, err), = finish([proc])
    assert code == 0, err
    assert check_every_episode_matches_its_seed(tmp_path / "shared.zarr") == [0, 1, 2]
