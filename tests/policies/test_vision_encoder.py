import pytest
import torch

from robot_learn.policies.vision_encoder import VisionEncoder


def _encoder(**kw):
    return VisionEncoder(image_size=24, crop_size=20, channels=(8, 16), blocks_per_stage=1, num_keypoints=4, out_dim=8, **kw)


def test_eval_takes_the_centre_crop():
    enc = _encoder().eval()
    images = torch.randint(0, 256, (3, 24, 24, 3), dtype=torch.uint8)
    assert torch.equal(enc.crop(images), images[:, 2:22, 2:22])


def test_training_takes_random_crops_that_differ_between_images_and_calls():
    enc = _encoder().train()
    torch.manual_seed(0)
    # Each image holds its pixel coordinates, so a crop reveals its offset.
    rows = torch.arange(24).view(24, 1).expand(24, 24)
    image = torch.stack([rows, rows.T, torch.zeros_like(rows)], dim=-1).to(torch.uint8)
    images = image.expand(16, 24, 24, 3).contiguous()
    crops = enc.crop(images)
    assert crops.shape == (16, 20, 20, 3)
    offsets = {(int(c[0, 0, 0]), int(c[0, 0, 1])) for c in crops}
    assert len(offsets) > 4
    assert all(0 <= top <= 4 and 0 <= left <= 4 for top, left in offsets)
    # A crop is a contiguous window.
    assert all(torch.equal(c[:, :, 0], c[0, 0, 0] + torch.arange(20).view(20, 1).expand(20, 20).to(torch.uint8)) for c in crops)


def test_output_has_out_dim_features_and_uses_no_batchnorm():
    enc = _encoder().eval()
    out = enc(torch.randint(0, 256, (5, 24, 24, 3), dtype=torch.uint8))
    assert out.shape == (5, 8)
    assert not any(isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for m in enc.modules())
    assert any(isinstance(m, torch.nn.GroupNorm) for m in enc.modules())


def test_wrong_image_size_or_dtype_is_rejected():
    enc = _encoder()
    with pytest.raises(ValueError, match="expected images of 24x24, got 32x32"):
        enc(torch.zeros(1, 32, 32, 3, dtype=torch.uint8))
    with pytest.raises(ValueError, match="uint8"):
        enc(torch.zeros(1, 24, 24, 3))


def test_crop_larger_than_image_is_rejected():
    with pytest.raises(ValueError, match="crop_size"):
        VisionEncoder(image_size=24, crop_size=30)
