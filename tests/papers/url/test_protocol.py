"""Oracles for the URL benchmark's data and metrics at kit scale: the crop (closed form on a linear ramp, identity
on the whole image), 2-item Fashion pairs, cosine R@1, the crop correlation and the per-set evaluation."""
import math
import re

import numpy as np
import pytest
import torch

from hedgekit.data.fashion import FashionSet
from hedgekit.errors import InputError
from hedgekit.papers.url import protocol


def test_whole_image_crop_is_the_identity():
    x = torch.rand(3, 1, 28, 56)
    boxes = np.tile([0.0, 0.0, 28.0, 56.0], (3, 1))
    torch.testing.assert_close(protocol.crop_images(x, boxes), x)


def test_crop_of_a_linear_ramp_matches_the_closed_form():
    # bilinear resampling reproduces a linear function exactly: output pixel (i, j) of the window
    # (top, left, h, w) sits at input pixel coordinate top + (i + 0.5) h / H - 0.5 (pixel-centre convention)
    H, W = 28, 56
    r, c = torch.meshgrid(torch.arange(H, dtype=torch.float64), torch.arange(W, dtype=torch.float64), indexing="ij")
    ramp = (0.3 * r - 0.1 * c + 2.0)[None, None]
    top, left, h, w = 3.0, 5.5, 14.0, 28.0  # away from the borders: no clamping
    out = protocol.crop_images(ramp, [[top, left, h, w]])[0, 0]
    i, j = torch.meshgrid(torch.arange(H, dtype=torch.float64), torch.arange(W, dtype=torch.float64), indexing="ij")
    expected = 0.3 * (top + (i + 0.5) * h / H - 0.5) - 0.1 * (left + (j + 0.5) * w / W - 0.5) + 2.0
    torch.testing.assert_close(out, expected)


def test_crop_boxes_keep_area_and_aspect_inside_the_image():
    b = protocol.crop_boxes(2000, 28, 56, np.random.default_rng(0))
    top, left, h, w = b.T
    area = h * w / (28 * 56)
    lo, hi = protocol.CROP_AREA
    assert area.min() >= lo - 1e-12 and area.max() <= hi + 1e-12
    np.testing.assert_allclose(w / h, 2.0)
    assert (top >= 0).all() and (left >= 0).all() and (top + h <= 28 + 1e-9).all() and (left + w <= 56 + 1e-9).all()
    assert area.mean() == pytest.approx(np.mean(protocol.CROP_AREA), abs=0.01)  # U(lo, hi) area


def test_kept_fraction_is_the_boxes_share_of_the_area():
    boxes = [[0.0, 0.0, 14.0, 28.0], [1.0, 2.0, 28.0, 56.0], [3.0, 5.5, 7.0, 14.0]]
    np.testing.assert_allclose(protocol.kept_fraction(boxes, 28, 56), [0.25, 1.0, 0.0625])
    b = protocol.crop_boxes(500, 28, 56, np.random.default_rng(0))
    kept = protocol.kept_fraction(b, 28, 56)
    assert np.unique(kept).size == 500  # a size per image: the crop correlation has something to rank
    with pytest.raises(InputError, match=r"\(n, 4\)"):
        protocol.kept_fraction([[0.0, 0.0, 14.0]], 28, 56)


def test_crop_correlation_ranks_what_each_crop_kept():
    # every image is the ramp x[r, c] = c; its crop of width w spans (W - 1) w / W of the ramp (the closed form above,
    # a little less where the window touches the border), and w = W sqrt(kept): the spread grows with what was kept
    H, W, n = 28, 56, 40
    x = torch.arange(W, dtype=torch.float32).expand(n, 1, H, W).contiguous()
    y = np.arange(n) % 4

    def model(sign):
        def predict(xs):
            spread = (xs.amax(dim=(1, 2, 3)) - xs.amin(dim=(1, 2, 3))).numpy()
            return {"embedding": np.eye(4)[y] + 0.01 * np.arange(n)[:, None], "uncertainty": sign / spread}
        return predict

    res = protocol.evaluate_set(model(1.0), x, y, crop_seed=3)
    assert res["crop_corr"] == 1.0  # u = 1 / spread: the less a crop kept, the higher its u, in perfect order
    assert protocol.evaluate_set(model(-1.0), x, y, crop_seed=3)["crop_corr"] == -1.0
    constant = protocol.evaluate_set(lambda xs: {"embedding": np.eye(4)[y], "uncertainty": np.ones(len(xs))},
                                     x, y, crop_seed=3)
    assert math.isnan(constant["crop_corr"]) and constant["crop"] == 0.0  # a u(x) that does not vary: undefined
    assert "crop_corr" not in protocol.evaluate_set(model(1.0), x, y)  # no crops, no crop metrics


def test_crop_rejects_boxes_outside_the_image():
    with pytest.raises(InputError, match="inside the image"):
        protocol.crop_images(torch.zeros(1, 1, 28, 56), [[20.0, 0.0, 14.0, 28.0]])
    with pytest.raises(InputError, match=r"\(1, 4\)"):
        protocol.crop_images(torch.zeros(1, 1, 28, 56), [[0.0, 0.0, 14.0]])


def test_fashion_pairs_spell_the_item_classes():
    rng = np.random.default_rng(1)
    labels = np.repeat(np.arange(10), 3)
    images = (labels[:, None, None] * 20 + rng.integers(0, 5, (30, 28, 28))).astype(np.uint8)  # class in the ink
    fake = FashionSet(images, labels, "test")
    x, y = protocol.fashion_pairs(2, seed=0, fashion=fake)
    assert x.shape == (200, 1, 28, 56) and y.tolist() == np.repeat(np.arange(100), 2).tolist()
    left = (x[:, 0, :, :28] * 255).round().long()
    right = (x[:, 0, :, 28:] * 255).round().long()
    assert ((left // 20).flatten(1) == (y // 10)[:, None]).all() and ((right // 20).flatten(1) == (y % 10)[:, None]).all()
    x2, _ = protocol.fashion_pairs(2, seed=0, fashion=fake)
    torch.testing.assert_close(x, x2)  # deterministic in the seed


def test_evaluate_set_uses_cosine_neighbours_and_the_crop():
    # two classes on two rays: cosine R@1 = 1 although Euclidean neighbours would mix the classes
    emb = np.array([[1, 0], [10, 0], [0, 1], [0, 10], [9, 1]], float)
    y = np.array([0, 0, 1, 1, 1])
    x = torch.arange(5, dtype=torch.float32).reshape(5, 1, 1, 1).expand(5, 1, 4, 8).contiguous()

    def predict(xs):
        i = xs[:, 0, 0, 0].round().long().clamp(0, 4).numpy()
        u = np.where(xs[:, 0].std(dim=(1, 2)).numpy() > -1, 0.1 * i, 0)
        return {"embedding": emb[i], "uncertainty": u}

    res = protocol.evaluate_set(predict, x, y, crop_seed=0)
    # item 4 ([9, 1], class 1) is closest in angle to [1, 0] / [10, 0] (class 0): the only R@1 error, highest u
    assert res["r1"] == pytest.approx(4 / 5)
    assert res["rauroc"] == pytest.approx(1.0)
    assert res["crop"] == 0.0  # a constant image crops to itself: same u, never strictly higher


@pytest.mark.parametrize("key, where, bad", [("embedding", "the embedding", 1), ("uncertainty", "u(x)", 2)])
def test_a_model_with_non_finite_outputs_is_a_diverged_model_named_by_its_set(key, where, bad):
    x = torch.zeros(4, 1, 4, 8)

    def predict(xs):
        out = {"embedding": np.eye(4)[: len(xs), :2] + 1.0, "uncertainty": np.ones(len(xs))}
        out[key] = out[key].copy()
        out[key][:bad] = [np.nan, np.inf][:bad] if key == "uncertainty" else np.nan  # rows 0..bad-1
        return out

    with pytest.raises(FloatingPointError, match=rf"^{re.escape(where)} is NaN or inf for {bad} of 4 images of the "
                                                 r"unseen-digit set$"):
        protocol.evaluate_set(predict, x, np.array([0, 0, 1, 1]), crop_seed=0, name="unseen-digit set")
