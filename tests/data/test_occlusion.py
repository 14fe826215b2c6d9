"""Tests of hedgekit.data.occlusion's box sides: "inclusive" {0..28} (the papers', HIB App. A with
SPE App. E's zero sides) and "positive" {1..28}, against closed forms by Monte Carlo. The box geometry,
`occlude` and `clip_box` are tested in test_ndigit.py."""
import hashlib

import numpy as np
import pytest
import torch

from hedgekit.data import random_occlusion, sample_digit_boxes
from hedgekit.data.occlusion import SIDES
from hedgekit.errors import InputError

# P(a box has zero area | the digit is occluded) = 1 - P(height > 0) P(width > 0)
P_ZERO_AREA = {"inclusive": 1 - (28 / 29) ** 2, "positive": 0.0}


def assert_binomial(hits: int, n: int, q: float):
    """``hits`` of ``n`` trials agree with probability ``q`` within 5 binomial sd (exactly, when q is 0 or 1)."""
    assert abs(hits - n * q) <= 5 * np.sqrt(n * q * (1 - q)) + 1e-9, (hits / n, q)


@pytest.mark.parametrize("sides", SIDES)
def test_zero_area_fraction_of_occluded_digits_matches_closed_form(sides):
    boxes = sample_digit_boxes(np.random.default_rng(0), 100_000, 2, 1.0, sides=sides)
    h, w = boxes[..., 2], boxes[..., 3]
    assert_binomial(int(((h == 0) | (w == 0)).sum()), h.size, P_ZERO_AREA[sides])
    lowest = {"inclusive": 0, "positive": 1}[sides]
    for side in (h, w):  # uniform on lowest..28: every value, each about equally often
        counts = np.bincount(side.ravel() - lowest, minlength=29 - lowest)
        assert counts.size == 29 - lowest and (abs(counts / counts.mean() - 1) < 0.1).all()


@pytest.mark.parametrize("sides", SIDES)
def test_effective_occluded_fraction_at_training_chance(sides):
    """At p = 0.2 a digit loses pixels with probability 0.2 * (1 - P(zero area)): 0.2 * (28/29)^2 ~ 0.186 for
    "inclusive", exactly 0.2 for "positive". Counted on white images after `random_occlusion`, end to end."""
    p = 0.2
    x = torch.ones(50_000, 1, 28, 56)
    out = random_occlusion(p, sides=sides)(x, np.random.default_rng(1))
    lost_pixels = (out[:, 0].reshape(-1, 28, 2, 28) == 0).any(dim=(1, 3))  # (images, digits)
    assert_binomial(int(lost_pixels.sum()), lost_pixels.numel(), p * (1 - P_ZERO_AREA[sides]))


def test_default_is_inclusive_and_keeps_the_random_stream():
    """The default draws the same boxes as before the option existed (golden hash of the earlier implementation),
    so cached datasets and shipped checkpoints stay valid. "positive" flips the same occlusion coins."""
    default = sample_digit_boxes(np.random.default_rng(0), 1000, 3, 0.3)
    assert hashlib.sha256(default.tobytes()).hexdigest()[:16] == "34a2e0c9879d68ea"
    np.testing.assert_array_equal(default, sample_digit_boxes(np.random.default_rng(0), 1000, 3, 0.3, "inclusive"))
    positive = sample_digit_boxes(np.random.default_rng(0), 1000, 3, 0.3, "positive")
    occluded = positive[..., 2] > 0
    assert (positive[occluded][:, 2:] >= 1).all() and not positive[~occluded][:, 2:].any()
    assert occluded[(default[..., 2] > 0) | (default[..., 3] > 0)].all()  # same coins: a superset of default's


@pytest.mark.parametrize("sides", ["Inclusive", "exclusive", None, 1])
def test_unknown_sides_is_a_clear_error(sides):
    with pytest.raises(InputError, match=r"sides must be one of \('inclusive', 'positive'\)"):
        sample_digit_boxes(np.random.default_rng(0), 2, 1, 0.5, sides=sides)
    with pytest.raises(InputError, match="sides must be one of"):
        random_occlusion(0.2, sides=sides)
