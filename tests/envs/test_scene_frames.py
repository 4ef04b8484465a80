"""Rendered pretraining scenes (``render_scene_frames``): what each kind of reset frame shows."""

from __future__ import annotations

import numpy as np
import pytest

from robot_learn.envs.base_env import SCENE_LABELS
from robot_learn.envs.scene import CUBE_HALF
from robot_learn.envs.scene_frames import render_scene_frames

L = {name: i for i, name in enumerate(SCENE_LABELS)}
MOVE, TCP = [L["move_x"], L["move_y"], L["move_z"]], [L["tcp_x"], L["tcp_y"], L["tcp_z"]]


def test_held_frames_put_the_object_between_closed_fingers_above_the_table():
    frames = render_scene_frames(["bin_place"], 12, cameras=("wrist",), image_size=32, held=1.0)
    labels = frames.labels
    offset = np.linalg.norm(labels[:, MOVE][:, :2] - labels[:, TCP][:, :2], axis=1)
    assert np.all(offset < 0.02), offset  # beside the grasp centre, wherever the IK put the arm
    assert np.all(labels[:, L["move_z"]] > CUBE_HALF + 0.005)  # lifted off the table
    assert np.allclose(labels[:, L["gripper"]], labels[0, L["gripper"]]) and labels[0, L["gripper"]] > 0.3
    assert frames.images["wrist"].shape == (12, 32, 32, 3)


def test_placed_frames_put_the_object_where_the_task_wants_it():
    frames = render_scene_frames(["bin_place"], 12, cameras=("front",), image_size=32, placed=1.0)
    target_xy = frames.labels[:, [L["target_x"], L["target_y"]]]
    move_xy = frames.labels[:, [L["move_x"], L["move_y"]]]
    assert np.all(np.linalg.norm(move_xy - target_xy, axis=1) < 0.03)  # inside the bin


def test_goal_labels_say_where_the_object_goes_the_white_square_in_reverse():
    """Forward, the goal is the target; in reverse it is the white square, at the family's
    spot distance on the side the target's full yaw picks (the 4-fold yaw labels leave
    that side open, so without these labels a frame encoder is never asked for it)."""
    from robot_learn.envs.task_bin import BinTask

    goal = [L["goal_x"], L["goal_y"]]
    forward = render_scene_frames(["bin_place"], 6, cameras=("front",), image_size=24).labels
    assert np.allclose(forward[:, goal], forward[:, [L["target_x"], L["target_y"]]], atol=1e-4)
    reverse = render_scene_frames(["bin_take"], 6, cameras=("front",), image_size=24, placed=1.0).labels
    spot_distance = np.linalg.norm(reverse[:, goal] - reverse[:, [L["target_x"], L["target_y"]]], axis=1)
    assert np.allclose(spot_distance, BinTask.spot_distance, atol=1e-4)
    assert np.all(np.linalg.norm(reverse[:, goal] - reverse[:, MOVE[:2]], axis=1) < 0.03)  # placed: on the square


@pytest.mark.parametrize("fractions", [{"held": -0.1}, {"held": 0.6, "placed": 0.5}])
def test_fractions_outside_zero_to_one_are_refused_naming_them(fractions):
    with pytest.raises(ValueError, match="near_object, held and placed"):
        render_scene_frames(["stack"], 1, cameras=("front",), image_size=24, **fractions)


def test_object_pose_labels_of_env_state_equal_the_scene_labels_objects_part():
    """Policies of output=poses train on labels computed from env_state and deploy on an
    encoder trained on scene_labels(): the two must agree, mid-episode too."""
    from robot_learn.envs import make_env, make_expert
    from robot_learn.envs.base_env import POSE_LABEL_DIM, object_pose_labels

    env = make_env("bin_place", cameras=(), max_steps=40)
    obs, _ = env.reset(seed=5)
    expert = make_expert("bin_place", seed=5)
    expert.reset(env.unwrapped)
    for _ in range(25):  # into the carry
        np.testing.assert_allclose(object_pose_labels(obs["env_state"][None])[0],
                                   env.unwrapped.scene_labels()[:POSE_LABEL_DIM], atol=1e-5)
        obs, *_ = env.step(expert.act(None, env.unwrapped))


def test_frames_rendered_in_worker_threads_equal_those_rendered_in_place(monkeypatch):
    """Scenes are posed here and rendered from their recorded states, in chunks, by worker
    threads: the frames, labels and their order are those of one thread, and a replayed
    frame is the frame of the live scene (colours and poses included)."""
    import robot_learn.envs.scene_frames as scene_frames
    from robot_learn.envs.registry import make_env
    from robot_learn.envs.rendering import CameraRenderer

    monkeypatch.setattr(scene_frames, "RENDER_CHUNK", 8)  # 20 resets + expert steps: several chunks
    kwargs = dict(resets=20, expert_episodes=1, cameras=("front", "wrist"), image_size=32, held=0.3, every=8)
    one = render_scene_frames(["bin_place", "stack"], workers=1, **kwargs)
    two = render_scene_frames(["bin_place", "stack"], workers=2, **kwargs)
    assert len(one) > 3 * 8
    for camera in ("front", "wrist"):
        assert np.array_equal(one.images[camera], two.images[camera]), camera
    assert np.array_equal(one.labels, two.labels) and one.task == two.task and one.instruction == two.instruction

    env = make_env("bin_place", cameras=(), max_steps=None)
    env.reset(seed=2_000_000)
    scene_frames._pose_scene(env, np.random.default_rng(0), 0.0, 0.3, 0.0)
    renderer = CameraRenderer(env.model, 32, 32)
    live = renderer.render(env.data, ("front", "wrist"))
    renderer.close()
    env.close()
    assert np.array_equal(live["front"], one.images["front"][0]) and np.array_equal(live["wrist"], one.images["wrist"][0])


def test_zero_workers_is_refused_naming_the_setting():
    with pytest.raises(ValueError, match="workers must be >= 1, got 0"):
        render_scene_frames(["bin_place"], 2, cameras=("front",), image_size=24, workers=0)


def test_rendering_threads_only_with_a_headless_gl(monkeypatch):
    """GLFW's contexts belong to the main thread, so without EGL or OSMesa scenes render in one."""
    from robot_learn.envs.scene_frames import default_render_workers

    monkeypatch.setenv("MUJOCO_GL", "glfw")
    assert default_render_workers() == 1
    monkeypatch.setenv("MUJOCO_GL", "egl")
    assert 1 <= default_render_workers() <= 4


def test_render_pool_returns_chunks_in_order_counts_every_scene_and_raises_a_workers_error():
    """Each worker keeps one renderer per task across chunks; the chunks come back in the order
    they were submitted whichever worker took them, the progress callback sees every scene,
    and a worker's error (here an unknown task in a recorded scene) is raised by finish(), or by
    the next submit() once the worker has failed."""
    import threading

    import mujoco

    from robot_learn.envs.registry import make_env
    from robot_learn.envs.scene_frames import RENDER_STATE, RenderPool, SceneRenderer

    env = make_env("bin_place", cameras=(), max_steps=None)
    scenes = []
    for seed in range(6):
        env.reset(seed=seed)
        state = np.empty(mujoco.mj_stateSize(env.model, RENDER_STATE))
        mujoco.mj_getState(env.model, env.data, state, RENDER_STATE)
        scenes.append(("bin_place", state, env.model.geom_rgba.copy()))
    env.close()
    alone = SceneRenderer(("front",), 24)
    expected = alone.render(scenes)["front"]
    alone.close()

    counted, lock = [], threading.Lock()

    def rendered(n: int) -> None:
        with lock:
            counted.append(n)

    pool = RenderPool(2, ("front",), 24, rendered)
    for chunk in (scenes[:1], scenes[1:4], scenes[4:]):
        pool.submit(chunk)
    chunks = pool.finish()
    assert [len(c["front"]) for c in chunks] == [1, 3, 2] and sum(counted) == 6
    assert np.array_equal(np.concatenate([c["front"] for c in chunks]), expected)
    assert len({frame.tobytes() for frame in expected}) == 6  # six distinct frames, so the order is checked

    broken = RenderPool(2, ("front",), 24, rendered)
    broken.submit([("no_such_task", scenes[0][1], scenes[0][2])])
    with pytest.raises(ValueError, match="no_such_task"):
        broken.finish()

    # The error surfaces at the next submit once the worker has failed, not only at finish()
    early = RenderPool(1, ("front",), 24, rendered)
    early.submit([("no_such_task", scenes[0][1], scenes[0][2])])
    early.workers[0].exception(timeout=60)  # wait for the worker to fail
    with pytest.raises(ValueError, match="no_such_task"):
        early.submit(scenes[:1])
    early.abandon()
