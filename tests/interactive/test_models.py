"""hedgekit.interactive.models: the app's preset from the environment, its model specs, training-time estimates."""
from __future__ import annotations

import pytest

from hedgekit.errors import InputError
from hedgekit.interactive import models

HIB = models.DEFAULT_MODEL


def test_expected_train_seconds_scales_with_steps_digits_and_kind():
    from hedgekit.zoo import Spec

    full = models.expected_train_seconds(Spec(kind="hib", preset="paper"))
    assert full == models.TRAIN_SECONDS["paper"]["hib"]
    assert models.expected_train_seconds(Spec(kind="hib", preset="paper", steps=900)) == full // 10  # 900 of 9,000
    point = models.TRAIN_SECONDS["paper"]["point"]
    assert models.expected_train_seconds(Spec(kind="point", preset="paper", steps=6000)) == point // 2  # of 12,000
    assert models.expected_train_seconds(Spec(kind="hib", preset="paper", n_digits=3)) == round(1.5 * full)
    assert models.expected_train_seconds(Spec(kind="triplet", data="fashion", dim=16, recipe="noisy",
                                              preset="paper")) == models.TRAIN_SECONDS["paper"]["triplet"]
    assert models.expected_train_seconds(Spec(kind="spe", data="lshapes", preset="paper")) == \
        models.TRAIN_SECONDS["paper"]["spe-lshapes"]


def test_expected_train_seconds_is_at_most_what_each_shipped_checkpoint_took():
    """Oracle: the training time each shipped checkpoint records (one torch thread, 2-core machine). Older, slower
    training code trained them, so the estimate for today's code must not exceed them (by more than a quarter)
    and must not be more than 5x below them."""
    from hedgekit.zoo import SHIPPED_DIR, load_checkpoint, recorded_spec

    paths = sorted(SHIPPED_DIR.glob("*.pt"))
    assert paths
    for path in paths:
        _, meta = load_checkpoint(path)
        ratio = models.expected_train_seconds(recorded_spec(meta)) / meta["train_seconds"]
        assert 0.2 < ratio < 1.25, (path.name, ratio)


def test_preset_from_env(monkeypatch):
    monkeypatch.delenv("HEDGEKIT_PRESET", raising=False)
    assert models.app_preset() == "paper"
    monkeypatch.setenv("HEDGEKIT_PRESET", "fast")
    assert models.app_preset() == "fast"
    assert models.app_spec(HIB).name == "hib-n2-d2-c1-beta0.0001-fast-s0"
    monkeypatch.setenv("HEDGEKIT_PRESET", "bogus")
    with pytest.raises(InputError, match="HEDGEKIT_PRESET"):
        models.app_preset()
    with pytest.raises(InputError, match="unknown model"):
        models.app_spec("MoG-7", "fast")
