"""Shipped checkpoints: small, loadable, and each reproduces the metrics recorded with it."""
import math

import pytest

from hedgekit.evaluation.retrieval import table1_metrics
from hedgekit.interactive.models import app_models, app_spec
from hedgekit.zoo import (SHIPPED_DIR, episode_metrics, eval_set, is_stale, load_checkpoint, prototype_head,
                          recorded_spec, shipped_names, shipped_specs)

APP_DEFAULTS = [app_spec(choice, preset="paper").name for choice in app_models()]  # the playground's four models
# KNN re-ranks 10,000 probes against the whole gallery by match probability: 1-5 CPU-min per HIB checkpoint, most
# of this file's time. The KNN code itself is checked against a naive loop (tests/evaluation/test_retrieval.py), so
# the recorded KNN numbers are reproduced for every point checkpoint and one HIB checkpoint, the rest of Table 1 for
# all.
KNN_REPRODUCED = {"hib-n2-d2-c1-beta0.0001-paper-s0"}


def test_app_defaults_are_shipped_and_small():
    assert set(APP_DEFAULTS) <= set(shipped_names())
    total = sum(p.stat().st_size for p in SHIPPED_DIR.glob("*.pt"))
    assert total <= 20 * 2**20, f"shipped checkpoints total {total / 2**20:.1f} MB > 20 MB"


PAIR_TRAINED = [spec.name for spec in shipped_specs() if spec.kind in ("point", "hib")]
PROTOTYPES = [spec.name for spec in shipped_specs() if spec.kind in ("pn", "spe")]


def test_every_shipped_checkpoint_is_checked_below():
    assert sorted(PAIR_TRAINED + PROTOTYPES) == shipped_names() and PROTOTYPES


@pytest.mark.slow  # re-evaluates each shipped checkpoint on 10,000 test images (10 s - 2 min each)
@pytest.mark.parametrize("name", PAIR_TRAINED)
def test_shipped_checkpoint_reproduces_its_metrics(name):
    model, meta = load_checkpoint(SHIPPED_DIR / f"{name}.pt")
    spec = recorded_spec(meta)
    assert meta["name"] == name and spec.name == name
    assert not is_stale(SHIPPED_DIR / f"{name}.pt", spec), "trained with another recipe than the preset's"
    with_knn = name.startswith("point") or name in KNN_REPRODUCED
    ours = table1_metrics(model, eval_set(spec), with_knn=with_knn)
    assert ("knn_clean" in ours) == with_knn
    keys = ("ap_clean", "ap_corrupt", "var_ratio", "eta_corrupt") + (("knn_clean", "knn_corrupt") if with_knn else ())
    for key in keys:
        recorded = meta["metrics"][key]
        if math.isnan(recorded):
            assert math.isnan(ours[key]), key
        else:
            assert ours[key] == pytest.approx(recorded, abs=1e-4), key


@pytest.mark.slow  # 100 episodes of all 70 seen classes (10-20 s each)
@pytest.mark.parametrize("name", PROTOTYPES)
def test_shipped_prototype_checkpoint_reproduces_its_episode_accuracy(name):
    model, meta = load_checkpoint(SHIPPED_DIR / f"{name}.pt")
    spec = recorded_spec(meta)
    assert meta["name"] == name and spec.name == name
    assert not is_stale(SHIPPED_DIR / f"{name}.pt", spec), "trained with another recipe than the preset's"
    assert episode_metrics(spec, model, prototype_head(meta)) == pytest.approx(meta["metrics"], abs=1e-6)


def test_recorded_table1_reads_the_checkpoints_and_lists_the_missing(tmp_path, monkeypatch, capsys):
    from hedgekit.cli import main
    from hedgekit.papers.hib.experiments import TABLE1_SETTINGS, recorded_table1, table1_specs
    from hedgekit.papers.hib.protocol import table1_frame

    monkeypatch.setenv("HEDGEKIT_DATA", str(tmp_path))  # empty cache: only the shipped models exist
    results, missing = recorded_table1("paper")
    grid = {s.name: (n, d, s.label) for n, d in TABLE1_SETTINGS for s in table1_specs(n, d, fast=False)}
    shipped = set(shipped_names()) & set(grid)
    assert set(results) == {grid[name] for name in shipped}
    assert (2, 2, "point") in results and len(missing) == 3 * len(TABLE1_SETTINGS) - len(results)
    assert not set(missing) & set(shipped)
    _, meta = load_checkpoint(SHIPPED_DIR / "hib-n2-d2-c1-beta0.0001-paper-s0.pt")
    res = results[(2, 2, "MoG-1")]
    assert res.repeats == 1 and res.mean("knn_corrupt") == meta["metrics"]["knn_corrupt"]
    assert res.var_ratio == pytest.approx(meta["metrics"]["var_ratio"])
    row = table1_frame(results).loc[(2, 2, "KNN", "corrupt")]
    assert row["MoG-1 paper"] == 0.760 and row["MoG-1 Δ"] == pytest.approx(meta["metrics"]["knn_corrupt"] - 0.760)
    assert main(["table1"]) == 0
    out = capsys.readouterr().out
    assert "| 2 | 2 | KNN | corrupt |" in out and ("not trained yet: " in out) == bool(missing)
    assert main(["table1", "--preset", "fast"]) == 1  # nothing trained in the empty cache


def test_the_models_fast_mode_loads_hedge():
    """FAST notebooks 02-04 load shipped `paper` models (`shipped_or_fast`) so that they show the effect they
    are about: on 1,000 seen test images, corrupt inputs get >= 3x the clean variance and more than twice
    the clean eta (HIB eq. 9; a `fast` model scores ~2.6x and 0.104 -> 0.108, docs/recipes.md)."""
    import numpy as np

    from hedgekit.data import load_ndigit
    from hedgekit.evaluation.embedded import embed_set
    from hedgekit.papers.hib import experiments as X
    from hedgekit.interactive.models import load_model

    test = load_ndigit(2, "test_seen")
    test = test.subset(np.random.default_rng(0).permutation(len(test))[:1000])
    for spec in X.table1_specs(2, 2, fast=True)[1:]:
        assert spec.preset == "paper", spec.name
        e = embed_set(load_model(spec, progress=False)[0], test)
        ratio = float(e.corrupt.total_var().mean() / e.clean.total_var().mean())
        assert ratio >= 3, (spec.name, ratio)
        assert e.eta_corrupt.mean() > 2 * e.eta_clean.mean(), (spec.name, e.eta_clean.mean(), e.eta_corrupt.mean())


@pytest.mark.slow  # embeds 60 test images of each seen class (~10 s)
def test_the_prototype_models_fast_mode_loads_discount_occluded_support():
    """FAST notebook 07 evaluates Table 2 on the shipped N = 2, D = 2 models (`spe.experiments.table2_specs`) so
    that it shows what Table 2 is about: with corrupt support images SPE's confidence-weighted prototypes (eq. 5)
    beat PN's plain means by a wide margin (a `fast` SPE does not: docs/recipes.md)."""
    from hedgekit.evaluation.episodes import evaluate_episodes
    from hedgekit.papers.spe import experiments as X
    from hedgekit.papers.spe.protocol import ndigit_test_sets
    from hedgekit.interactive.models import load_model

    seen = ndigit_test_sets(2, 60, 0)["seen"]
    acc = {}
    for label in ("PN", "SPE"):
        spec = X.table2_specs(True)[(2, 2)][label]
        assert spec.preset == "paper", spec.name
        model, meta = load_model(spec, progress=False)
        acc[label] = evaluate_episodes(model, prototype_head(meta), seen, n_episodes=30, k_support=50,
                                       support_corrupt=True)[0]
    assert acc["SPE"] > acc["PN"] + 0.15, acc
