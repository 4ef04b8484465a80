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


def test_film_starts_as_identity_and_learns_to_make_features_depend_on_the_condition():
    torch.manual_seed(0)
    enc = _encoder(cond_dim=6).eval()
    plain = _encoder().eval()
    plain.load_state_dict({k: v for k, v in enc.state_dict().items() if not k.startswith("film.")})
    images = torch.randint(0, 256, (4, 24, 24, 3), dtype=torch.uint8)
    cond_a, cond_b = torch.randn(4, 6), torch.randn(4, 6)
    assert len(enc.film) == 2  # one FiLM per stage
    assert torch.allclose(enc(images, cond_a), plain(images))  # zero-initialised FiLM = the plain encoder
    # Train the encoder to separate the two conditions on the same images.
    opt = torch.optim.Adam(enc.parameters(), lr=1e-2)
    enc.train()
    for _ in range(20):
        loss = -(enc(images, cond_a) - enc(images, cond_b)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    enc.eval()
    assert (enc(images, cond_a) - enc(images, cond_b)).abs().mean() > 1e-2


def test_film_encoder_without_its_condition_is_rejected():
    enc = _encoder(cond_dim=6)
    images = torch.zeros(2, 24, 24, 3, dtype=torch.uint8)
    with pytest.raises(ValueError, match=r"needs cond \[2, 6\], got None"):
        enc(images)
    with pytest.raises(ValueError, match=r"needs cond \[2, 6\], got \(2, 5\)"):
        enc(images, torch.zeros(2, 5))


def test_flatten_pool_reads_where_a_blob_is():
    """The flatten head keeps position: the same blob in two places gives different features,
    and an unknown pool name is rejected with the valid ones."""
    torch.manual_seed(0)
    enc = _encoder(pool="flatten").eval()
    left = torch.zeros(1, 24, 24, 3, dtype=torch.uint8)
    right = left.clone()
    left[:, 4:8, 4:8] = 255
    right[:, 4:8, 14:18] = 255
    out = enc(torch.cat([left, right]))
    assert out.shape == (2, 8)
    assert (out[0] - out[1]).abs().max() > 1e-3
    with pytest.raises(ValueError, match="unknown vision pool 'max'; valid: spatial_softmax, flatten"):
        _encoder(pool="max")
