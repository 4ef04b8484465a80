import os

import pytest

# Headless rendering everywhere; set before mujoco is imported.
os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("PYOPENGL_PLATFORM", "egl")


@pytest.fixture
def one_torch_thread():
    """Torch on one thread for the test, restored after (the test machine is shared)."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture
def assert_same_episodes_by_seed():
    """``check(path_a, path_b, keys, seeds)``: the two stores hold episodes of exactly
    ``seeds`` (meta ``seed``), and per seed the same arrays under ``keys``, whatever their
    order in each store (parallel writers commit in completion order)."""
    import numpy as np

    from robot_learn.data import EpisodeStore

    def check(path_a, path_b, keys, seeds):
        with EpisodeStore.open(path_a, mode="r") as a, EpisodeStore.open(path_b, mode="r") as b:
            where = [{int(seed): e for e, seed in enumerate(store.meta["seed"])} for store in (a, b)]
            assert sorted(where[0]) == sorted(where[1]) == sorted(seeds)
            for seed in seeds:
                (s0, s1), (r0, r1) = a.episode_range(where[0][seed]), b.episode_range(where[1][seed])
                for key in keys:
                    np.testing.assert_array_equal(a.read(key, s0, s1), b.read(key, r0, r1),
                                                  err_msg=f"{key}, seed {seed}")
    return check
