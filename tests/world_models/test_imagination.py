"""Which imagined frames stop a rollout: NaN/Inf always, far-out pixels only when many.

A tiny untrained model predicts exactly copy-last-frame (its output conv is zero);
setting that conv's bias shifts every predicted pixel by the same amount, so the
start frames decide which pixels land far outside [0, 255].
"""

import numpy as np
import torch

from robot_learn.world_models import VideoWorldModel, WorldModelConfig
from robot_learn.world_models.imagination import (FRAME_SLACK, MAX_FAR_FRACTION, Imagination, frame_problem,
                                                  to_uint8)

SIZE = 32
SHIFT = 80.0  # pixel units every prediction adds: black -> 80 (fine), white -> 335 (> 255 + FRAME_SLACK)


def shifting_model() -> VideoWorldModel:
    config = WorldModelConfig(image_size=SIZE, space_to_depth=2, block_out_channels=(16, 32), state_hidden=32)
    torch.manual_seed(0)
    model = VideoWorldModel(config).eval()
    with torch.no_grad():
        model.unet.conv_out.bias.fill_(SHIFT / 127.5)  # the residual is in [-1, 1] units
    return model


def imagine_one_step(white_pixels: int) -> tuple[torch.Tensor, str | None]:
    """One predicted frame from black start frames with ``white_pixels`` white pixels."""
    model = shifting_model()
    c = model.config
    frames = np.zeros((1, c.history, SIZE, SIZE, 3), np.uint8)
    frames.reshape(1, c.history, SIZE * SIZE, 3)[:, :, :white_pixels] = 255
    imagination = Imagination(model, frames, np.zeros((1, c.history, c.state_dim), np.float32))
    with torch.no_grad():
        frame, _, problems = imagination.step(np.zeros((1, c.action_dim), np.float32))
    return frame[0], problems[0]


def test_a_few_stray_pixels_pass_and_are_clipped():
    assert SIZE * SIZE * 3 * MAX_FAR_FRACTION > 3 * 5  # 5 white pixels stay under the allowed fraction
    frame, problem = imagine_one_step(white_pixels=5)
    assert problem is None
    assert frame.dtype == torch.uint8
    flat = frame.reshape(-1, 3)
    assert (flat[:5] == 255).all()  # 335 clipped to 255
    assert (flat[5:] == round(SHIFT)).all()


def test_a_frame_mostly_out_of_range_stops_with_one_line():
    _, problem = imagine_one_step(white_pixels=SIZE * SIZE // 2)
    assert problem is not None and "\n" not in problem
    assert problem.startswith("imagined frame out of range: 50.0% of pixel values are more than 64 units "
                              "outside [0, 255] (allowed 1%)")


def test_just_over_the_allowed_fraction_stops():
    values = 1000
    frame = torch.full((values,), 128.0)
    frame[: int(values * MAX_FAR_FRACTION)] = 255.0 + FRAME_SLACK + 1  # exactly the allowed fraction
    assert frame_problem(frame) is None
    frame[int(values * MAX_FAR_FRACTION)] = -FRAME_SLACK - 1  # one more, below the range
    assert "out of range" in frame_problem(frame)


def test_a_single_nan_or_inf_pixel_is_always_fatal():
    for bad in (float("nan"), float("inf"), float("-inf")):
        frame = torch.full((SIZE, SIZE, 3), 128.0)
        frame[3, 4, 1] = bad
        assert frame_problem(frame) == "imagined frame has NaN or Inf pixels"


def test_to_uint8_clips_to_the_pixel_range():
    frame = torch.tensor([-40.0, -0.4, 12.6, 254.6, 300.0])
    assert to_uint8(frame).tolist() == [0, 0, 13, 255, 255]
