"""``robot-learn collect`` -> ``inspect`` -> ``render-episode`` end to end on real tasks."""

import imageio.v2 as imageio
import numpy as np
import pytest

from robot_learn.data import EpisodeStore


@pytest.fixture(scope="module")
def collected(tmp_path_factory):
    """Two expert episodes of 'stack' at 32 px, collected through the real CLI."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    tmp = tmp_path_factory.mktemp("collect")
    script = Path(sys.executable).with_name("robot-learn")
    out = subprocess.run(
        [str(script), "collect", "task=stack", "episodes=2", "out=data/stack.zarr",
         "noise=0.0", "seed=0", "cameras=[front,wrist]", "image_size=32"],
        cwd=tmp, capture_output=True, text=True, timeout=300,
        env={**os.environ, "MUJOCO_GL": "egl", "OMP_NUM_THREADS": "1"})
    return tmp, out


def test_collect_stores_successful_expert_demos(collected):
    tmp, out = collected
    assert out.returncode == 0, out.stderr
    assert "2 succeeded, 2 stored" in out.stdout
    store = EpisodeStore.open(tmp / "data" / "stack.zarr")
    assert store.num_episodes == 2
    meta = store.meta
    assert list(meta["seed"]) == [0, 1]
    assert list(meta["source"]) == ["demo", "demo"] and all(meta["success"])
    assert set(store.keys) >= {"state", "env_state", "images/front", "images/wrist", "action",
                               "policy_action", "intervention", "reward", "progress", "phase"}
    ep = store.episode(0)["steps"]
    assert ep["images/front"].shape[1:] == (32, 32, 3)
    np.testing.assert_array_equal(ep["policy_action"], ep["action"])
    assert not ep["intervention"].any()
    # Progress starts low and the expert reaches the goal; phases advance.
    assert ep["progress"][0] < ep["progress"][-1]
    assert len(np.unique(ep["phase"])) > 1


def test_collect_shows_a_progress_bar(collected):
    _, out = collected
    assert "collect stack" in out.stderr and "ep" in out.stderr


def test_inspect_prints_episodes_per_task_frames_and_size(collected, run_cli):
    tmp, _ = collected
    out = run_cli("inspect", "data/stack.zarr", cwd=tmp)
    assert out.returncode == 0, out.stderr
    store = EpisodeStore.open(tmp / "data" / "stack.zarr")
    assert f"episodes {store.num_episodes}" in out.stdout
    assert f"frames {store.num_frames}" in out.stdout
    assert "stack" in out.stdout and "demo" in out.stdout and "MB" in out.stdout


@pytest.mark.parametrize("camera,width", [("front", 32), ("all", 64)])
def test_render_episode_writes_every_frame(collected, run_cli, camera, width):
    tmp, _ = collected
    out = run_cli("render-episode", "data/stack.zarr", "episode=1", f"out=ep_{camera}.mp4",
                  f"camera={camera}", cwd=tmp)
    assert out.returncode == 0, out.stderr
    frames = imageio.mimread(tmp / f"ep_{camera}.mp4")
    store = EpisodeStore.open(tmp / "data" / "stack.zarr")
    start, end = store.episode_range(1)
    assert len(frames) == end - start
    assert frames[0].shape[:2] == (32, width)
    assert frames[0].std() > 1.0  # a rendered scene, not a blank frame


def test_render_episode_names_valid_cameras_and_episode_range(collected, run_cli):
    tmp, _ = collected
    out = run_cli("render-episode", "data/stack.zarr", "camera=side", cwd=tmp)
    assert out.returncode == 2 and "unknown camera 'side'; valid cameras: front, wrist, all" in out.stderr
    out = run_cli("render-episode", "data/stack.zarr", "episode=7", cwd=tmp)
    assert out.returncode == 2 and "episode 7 out of range" in out.stderr


def test_collect_drops_failures_unless_asked_to_keep_them(run_cli, tmp_path):
    # Three steps are too few to stack a cube, so every episode fails.
    out = run_cli("collect", "task=stack", "episodes=2", "out=fail.zarr", "max_steps=3",
                  "cameras=[]")
    assert out.returncode == 0, out.stderr
    assert "0 succeeded, 0 stored" in out.stdout
    out = run_cli("collect", "task=stack", "episodes=2", "out=keep.zarr", "max_steps=3",
                  "cameras=[]", "keep_failures=true")
    assert out.returncode == 0, out.stderr
    store = EpisodeStore.open(tmp_path / "keep.zarr")
    assert store.num_episodes == 2 and not store.meta["success"].any()
    assert not any(k.startswith("images/") for k in store.keys)
    assert store.num_frames == 6


def test_collect_records_easy_episodes_to_reverse_with_the_object_put_down_anywhere(run_cli, tmp_path):
    out = run_cli("collect", "task=bin_take", "episodes=2", "out=take.zarr", "cameras=[]", "drop_spot=anywhere",
                  "to_rest=true")
    assert out.returncode == 0, out.stderr
    store = EpisodeStore.open(tmp_path / "take.zarr")
    assert store.num_episodes == 2 and store.meta["success"].all()
    from robot_learn.envs import make_env

    env, beside = make_env("bin_take", cameras=(), drop_spot="anywhere"), make_env("bin_take", cameras=())
    for e in range(2):
        steps = store.episode(e)["steps"]
        env.reset(seed=e)
        # Where the cube was put down (before the return to rest): the square drawn anywhere ...
        assert np.linalg.norm(steps["env_state"][-1, 0:2] - env.params[9:11]) < 0.025
        # ... and back at rest: the arm ends where it started.
        np.testing.assert_allclose(steps["state"][-1, 6:9], steps["state"][0, 6:9], atol=0.01)
        beside.reset(seed=e)
        assert np.linalg.norm(env.params[9:11] - beside.params[9:11]) > 0.01
    out = run_cli("collect", "task=bin_place", "episodes=1", "out=place.zarr", "cameras=[]", "drop_spot=anywhere")
    assert out.returncode == 2 and "drop_spot 'anywhere' is for reverse tasks" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and not (tmp_path / "place.zarr").exists()
    out = run_cli("collect", "task=bin_take", "episodes=1", "out=far.zarr", "cameras=[]", "drop_spot=far")
    assert out.returncode == 2 and "drop_spot: unknown drop_spot 'far'; valid: beside, anywhere" in out.stderr


def test_collect_records_the_object_slots_on_request_and_names_bad_keys(tmp_path):
    from robot_learn.envs.demos import collect_demos
    from robot_learn.data import EpisodeStore

    collect_demos("stack", 1, tmp_path / "d.zarr", cameras=(), progress_bar=False,
                  obs_keys=("state", "env_state", "objects"))
    assert "objects" in EpisodeStore.open(tmp_path / "d.zarr").keys
    with pytest.raises(ValueError, match=r"cannot record observation keys \['joints'\]; this env offers"):
        collect_demos("stack", 1, tmp_path / "e.zarr", cameras=(), progress_bar=False, obs_keys=("state", "joints"))
