"""Shipped checkpoints: small, loadable, and each reproduces the metrics recorded with it."""
import math

import pytest

from hedgekit.evaluation import table1_metrics
from hedgekit.zoo import SHIPPED_DIR, eval_set, load_checkpoint, shipped_names, spec_from_name

APP_DEFAULTS = ["point-n2-d2-paper-s0", "hib-n2-d2-c1-beta0.0001-paper-s0", "hib-n2-d2-c2-beta0.0001-paper-s0"]


def test_app_defaults_are_shipped_and_small():
    assert set(APP_DEFAULTS) <= set(shipped_names())
    total = sum(p.stat().st_size for p in SHIPPED_DIR.glob("*.pt"))
    assert total <= 20 * 2**20, f"shipped checkpoints total {total / 2**20:.1f} MB > 20 MB"


@pytest.mark.parametrize("name", shipped_names())
def test_shipped_checkpoint_reproduces_its_metrics(name):
    model, meta = load_checkpoint(SHIPPED_DIR / f"{name}.pt")
    assert meta["name"] == name and spec_from_name(name).name == name
    ours = table1_metrics(model, eval_set(spec_from_name(name)))
    for key in ("ap_clean", "ap_corrupt", "knn_clean", "knn_corrupt", "var_ratio", "eta_corrupt"):
        recorded = meta["metrics"][key]
        if math.isnan(recorded):
            assert math.isnan(ours[key]), key
        else:
            assert ours[key] == pytest.approx(recorded, abs=1e-4), key
