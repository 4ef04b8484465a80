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
