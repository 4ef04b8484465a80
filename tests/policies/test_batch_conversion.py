import numpy as np
import torch

from robot_learn.policies import to_torch


def test_sampler_batch_becomes_tensors_with_images_still_uint8():
    batch = {
        "obs": {
            "state": np.zeros((4, 2, 10), np.float32),
            "images": {"front": np.zeros((4, 2, 96, 96, 3), np.uint8)},
        },
        "action": np.ones((4, 16, 5), np.float32),
        "instruction": ["put the red cube on the blue cube"] * 4,
        "episode": np.arange(4),
        "t": np.arange(4),
    }
    out = to_torch(batch, "cpu")
    assert out["obs"]["state"].dtype == torch.float32 and out["obs"]["state"].shape == (4, 2, 10)
    assert out["obs"]["images"]["front"].dtype == torch.uint8
    assert out["action"].shape == (4, 16, 5)
    assert out["instruction"] == batch["instruction"]
    assert torch.equal(out["episode"], torch.arange(4))


def test_float64_becomes_float32_and_string_arrays_become_lists():
    out = to_torch({"x": np.zeros(3, np.float64), "instruction": np.array(["a", "b"])})
    assert out["x"].dtype == torch.float32
    assert out["instruction"] == ["a", "b"]
