"""hedgekit.interactive.models: the app's preset from the environment, its model specs, training-time estimates."""
from __future__ import annotations

import pytest

from hedgekit.errors import InputError
from hedgekit.interactive import models

HIB = models.DEFAULT_MODEL


def test_expected_train_seconds_scales_with_a_steps_override():
    from hedgekit.zoo import Spec

    full = models.expected_train_seconds(Spec(kind="hib", preset="paper"))
    assert full == models.TRAIN_SECONDS["paper"]
    assert models.expected_train_seconds(Spec(kind="hib", preset="paper", steps=900)) == full // 10  # 900 of 9,000
    assert models.expected_train_seconds(Spec(kind="point", preset="paper", steps=6000)) == full // 2  # 6,000 of 12,000


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
