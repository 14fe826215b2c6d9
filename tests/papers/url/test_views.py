"""The unsupervised URL heads' two views (hedgekit.papers.url.views).

Oracles: the identity view returns the image; a shear keeps the middle row; a stroke change is a 3 x 3 dilation or
erosion; a 180-degree turn is a flip of both axes and a 90-degree turn of a
4 x 8 image is ``rot90`` of its central 4 x 4 block with zeros beside it (the turn is rigid in pixels); a crop without
a turn is `protocol.crop_images` of the same window; an occlusion box is a rectangle of zeros of the drawn area; the
views are float in [0, 1], fixed by the seed and differ from the image.
"""
import numpy as np
import pytest
import torch

from hedgekit.errors import InputError
from hedgekit.papers.url.protocol import crop_images
from hedgekit.papers.url.views import TwoViews, view_thetas


STILL = dict(crop_area=(1.0, 1.0), aspect=1.0, max_degrees=0.0, max_shear=0.0, stroke_p=0.0, box_p=0.0)  # identity


class FixedRng:
    """An rng whose ``uniform(lo, hi, n)`` returns lo + f (hi - lo) for the next f of ``fractions``."""

    def __init__(self, *fractions):
        self.fractions = list(fractions)

    def uniform(self, lo, hi, n):
        return np.full(n, lo + self.fractions.pop(0) * (hi - lo))


def _images(n=3, h=28, w=56, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).integers(0, 256, (n, 1, h, w), dtype=np.uint8))


def _resample(x, theta):
    grid = torch.nn.functional.affine_grid(torch.as_tensor(theta, dtype=torch.float32), list(x.shape),
                                           align_corners=False)
    return torch.nn.functional.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)


def test_views_are_float_in_unit_range_of_the_images_shape_and_differ_from_the_image():
    x = _images()
    out = TwoViews()(x, np.random.default_rng(0))
    assert out.shape == x.shape and out.dtype == torch.float32
    assert out.min() >= 0 and out.max() <= 1
    assert ((out - x.float() / 255).abs().flatten(1).amax(1) > 0.1).all()  # every view differs from its image


def test_a_seed_fixes_the_views_and_two_draws_differ():
    x, views = _images(), TwoViews()
    a, b = views(x, np.random.default_rng(5)), views(x, np.random.default_rng(5))
    torch.testing.assert_close(a, b, rtol=0, atol=0)
    rng = np.random.default_rng(5)
    first, second = views(x, rng), views(x, rng)  # the trainer's two views: one stream, two draws
    assert not torch.equal(first, second)


def test_the_identity_view_returns_the_image():
    x = _images()
    out = TwoViews(**STILL)(x, np.random.default_rng(0))
    torch.testing.assert_close(out, x.float() / 255, rtol=0, atol=1e-5)


def test_a_half_turn_flips_both_axes():
    x = _images(1).float() / 255
    theta = view_thetas(1, 28, 56, FixedRng(1, 0.5, 0.5, 0.5, 1), crop_area=(1, 1), aspect=1.0, max_degrees=180)
    torch.testing.assert_close(_resample(x, theta), x.flip(-2, -1), rtol=0, atol=1e-5)


def test_a_quarter_turn_is_rigid_in_pixels():
    x = _images(1, 4, 8).float() / 255
    theta = view_thetas(1, 4, 8, FixedRng(1, 0.5, 0.5, 0.5, 1), crop_area=(1, 1), aspect=1.0, max_degrees=90)
    out = _resample(x, theta)
    middle = [torch.rot90(x[..., 2:6], k, (-2, -1)) for k in (1, 3)]
    assert any(torch.allclose(out[..., 2:6], m, atol=1e-5) for m in middle)
    assert out[..., :2].abs().max() < 1e-6 and out[..., 6:].abs().max() < 1e-6


def test_a_crop_without_a_turn_is_the_protocols_crop_of_that_window():
    x = torch.nn.functional.pad(_images(1, 26, 54).float() / 255, (1, 1, 1, 1))  # a zero rim, as MNIST has: the
    # protocol repeats the border beyond the image and the views read zeros there, which agree on it
    # area 1/4 with the image's aspect (sides halved), centre at the right (cx = 1 - 1/2) and top (cy = -(1 - 1/2))
    theta = view_thetas(1, 28, 56, FixedRng(0, 0.5, 1, 0, 0.5), crop_area=(0.25, 0.25), aspect=1.0, max_degrees=0)
    torch.testing.assert_close(_resample(x, theta), crop_images(x, [[0, 28, 14, 28]]), rtol=0, atol=1e-5)


def test_an_occlusion_box_is_a_rectangle_of_zeros_of_the_drawn_area():
    x = torch.ones(64, 1, 28, 56)
    out = TwoViews(**{**STILL, "box_p": 1.0, "box_area": (0.1, 0.2)})(x, np.random.default_rng(1))
    for img in out[:, 0]:
        zero = img < 0.5
        rows, cols = zero.any(1).nonzero().flatten(), zero.any(0).nonzero().flatten()
        assert zero.sum() == len(rows) * len(cols)  # a full rectangle
        assert rows.diff().eq(1).all() and cols.diff().eq(1).all()
        assert 0.1 - 0.04 <= zero.float().mean() <= 0.2 + 0.04  # the drawn area, to whole pixels
    assert ((out - 1).abs() < 1e-5).sum() == out.numel() - (out < 0.5).sum()  # only the box changes


def test_box_p_zero_leaves_no_box_and_bad_settings_are_refused():
    x = torch.ones(8, 1, 28, 56)
    out = TwoViews(**STILL)(x, np.random.default_rng(0))
    assert ((out - 1).abs() < 1e-5).all()
    for bad in (dict(crop_area=(0, 1)), dict(box_area=(0.5, 0.2)), dict(aspect=0.5), dict(max_degrees=-1),
                dict(box_p=2), dict(max_shear=1), dict(stroke_p=-0.1)):
        with pytest.raises(InputError):
            TwoViews(**bad)
    with pytest.raises(InputError, match="B, C, H, W"):
        TwoViews()(torch.ones(28, 56), np.random.default_rng(0))


def test_a_stroke_change_is_a_3x3_dilation_or_erosion():
    x = _images(16).float() / 255
    out = TwoViews(**{**STILL, "stroke_p": 1.0})(x, np.random.default_rng(2))
    thick = torch.nn.functional.max_pool2d(x, 3, 1, 1)
    thin = -torch.nn.functional.max_pool2d(-x, 3, 1, 1)
    kinds = [bool(torch.allclose(o, a, atol=1e-5)) + 2 * bool(torch.allclose(o, b, atol=1e-5))
             for o, a, b in zip(out, thick, thin)]
    assert set(kinds) == {1, 2}  # each view is one of the two, and 16 views hold both


def test_a_shear_slides_rows_along_themselves_and_keeps_the_middle_row():
    x = _images(4, 5, 8).float() / 255
    out = TwoViews(**{**STILL, "max_shear": 0.5})(x, np.random.default_rng(0))
    torch.testing.assert_close(out[..., 2, :], x[..., 2, :], rtol=0, atol=1e-5)  # y = 0 does not move
    assert not torch.allclose(out, x, atol=1e-3)
