"""frame_pretraining.cpu_bf16: the frame encoder pretrains in bf16 on contiguous activations and learns as in fp32."""

import numpy as np
import pytest
import torch

from robot_learn.policies.discrete_diffusion.observation_tokens import PatchStem
from robot_learn.policies.frame_encoder import FrameEncoder, FrameEncoderConfig, FramePretrainConfig
from robot_learn.training.frame_pretraining import pretrain_frame_encoder
from robot_learn.training.precision import cpu_runs_bf16

TINY = dict(cameras=["front"], image_size=32, channels=[8, 16], num_keypoints=8, camera_dim=16, feature_dim=12,
            label_names=["x", "y"], output="labels")


def _squares(n: int, seed: int = 0) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Frames with one bright 6 px square; the labels are its centre, so there is something to learn."""
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 40, (n, 32, 32, 3), dtype=np.uint8)
    corners = rng.integers(0, 26, (n, 2))
    for image, (r, c) in zip(images, corners):
        image[r:r + 6, c:c + 6] = 230
    return {"front": images}, ((corners + 3) / 32.0).astype(np.float32)


def _norm_input_layouts(encoder: torch.nn.Module, amp: bool, images) -> set[bool]:
    """Whether each GroupNorm's input is contiguous (NCHW), in one training forward."""
    seen: set[bool] = set()
    hooks = [m.register_forward_hook(lambda _m, inp, _o: seen.add(inp[0].is_contiguous()))
             for m in encoder.modules() if isinstance(m, torch.nn.GroupNorm)]
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
        encoder.train()(images)
    for hook in hooks:
        hook.remove()
    return seen


def test_under_cpu_autocast_the_camera_encoders_run_on_contiguous_activations_and_channels_last_otherwise():
    """bf16 GroupNorm on channels-last activations was the slow part of a bf16 encoder step
    (docs/benchmarks.md, session 60); fp32 keeps the strided layout, its fastest."""
    frames = torch.randint(0, 255, (4, 32, 32, 3), dtype=torch.uint8)
    encoder = FrameEncoder(FrameEncoderConfig(**TINY))
    assert _norm_input_layouts(encoder, True, {"front": frames}) == {True}
    assert _norm_input_layouts(encoder, False, {"front": frames}) == {False}
    stem = PatchStem(32, 28, (8, 16), 3, 16)  # the VLA's camera stem shares the image input
    assert _norm_input_layouts(stem, True, frames) == {True}
    assert _norm_input_layouts(stem, False, frames) == {False}


@pytest.mark.skipif(not cpu_runs_bf16(), reason="this CPU has no native bf16 (AVX512-BF16 or AMX)")
def test_bf16_pretraining_learns_where_the_square_is_as_fp32_does(one_torch_thread):
    images, labels = _squares(400)
    instructions = [""] * len(labels)
    errors = {}
    for bf16 in (False, True):
        config = FramePretrainConfig(steps=300, batch_size=16, cpu_bf16=bf16)
        _, metrics = pretrain_frame_encoder(images, labels, instructions, FrameEncoderConfig(**TINY), config)
        assert metrics["precision"] == ("bf16" if bf16 else "fp32")
        errors[bf16] = metrics["move_xy_error_cm_median"]
    print(f"median error of the square's centre (units of 1/100 frame): fp32 {errors[False]:.2f}, "
          f"bf16 {errors[True]:.2f}")
    # A guess at the frame's centre is about 30 off; both learn to a few units.
    assert errors[True] < 10 and errors[True] < 1.5 * errors[False] + 1
