"""Each external adapter resets and steps with robot-learn observations and info."""

import gym_aloha  # noqa: F401  (the bench extra must be installed: missing is an error, not a skip)
import gym_pusht  # noqa: F401
import metaworld  # noqa: F401
import numpy as np
import pytest

from robot_learn.envs import make_env

CASES = [("pusht", ("front",), 2, 4), ("metaworld/peg-unplug-side", ("front", "wrist"), 4, 17),
         ("aloha/insertion", ("top",), 14, 14), ("aloha/transfer-cube", ("top",), 14, 7)]


@pytest.mark.parametrize("name,cameras,state_dim,env_state_dim", CASES)
def test_adapter_resets_and_steps_with_our_conventions(name, cameras, state_dim, env_state_dim):
    env = make_env(name, cameras=cameras, image_size=32, max_steps=3)
    obs, info = env.reset(seed=3)
    assert obs["state"].dtype == np.float32 and obs["state"].shape == (state_dim,)
    assert obs["env_state"].dtype == np.float32 and obs["env_state"].shape == (env_state_dim,)
    assert set(obs["images"]) == set(cameras)
    for img in obs["images"].values():
        assert img.dtype == np.uint8 and img.shape == (32, 32, 3) and img.std() > 0
    assert isinstance(obs["instruction"], str) and obs["instruction"]
    assert env.observation_space.contains(obs)
    assert info["success"] is False and 0.0 <= info["progress"] <= 1.0
    env.action_space.seed(0)
    for step in range(3):
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        assert isinstance(info["success"], bool) and 0.0 <= info["progress"] <= 1.0
        assert terminated == info["success"]
    assert truncated and not terminated  # random actions do not solve these in 3 steps
    with pytest.raises(ValueError, match="action shape"):
        env.step(np.zeros(env.action_space.shape[0] + 1, np.float32))
    with pytest.raises(ValueError, match="NaN"):
        env.step(np.full(env.action_space.shape, np.nan, np.float32))
    env.close()


@pytest.mark.parametrize("name", ["pusht", "metaworld/peg-insert-side"])
def test_same_seed_same_scene_and_different_seeds_differ(name):
    env = make_env(name, cameras=())
    a = env.reset(seed=5)[0]["env_state"]
    b = env.reset(seed=6)[0]["env_state"]
    c = env.reset(seed=5)[0]["env_state"]
    np.testing.assert_array_equal(a, c)
    assert not np.allclose(a, b)


def test_metaworld_front_camera_is_turned_upright():
    """corner2's image "up" axis points down in the world, so MuJoCo renders it upside
    down; ``front`` is that frame turned 180 degrees (shadows off, as in training)."""
    import mujoco

    env = make_env("metaworld/peg-unplug-side", cameras=("front",), image_size=64)
    img = env.reset(seed=0)[0]["images"]["front"]
    model, data = env.unwrapped.mw.model, env.unwrapped.mw.data
    cam_up = data.cam("corner2").xmat.reshape(3, 3)[:, 1]  # camera y axis in the world
    assert cam_up[2] < 0
    renderer = mujoco.Renderer(model, 64, 64)
    renderer.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = False
    renderer.scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = False
    renderer.update_scene(data, camera="corner2")
    raw = renderer.render()
    renderer.close()
    env.close()
    np.testing.assert_array_equal(img, raw[::-1, ::-1])
    assert not np.array_equal(img, raw)
