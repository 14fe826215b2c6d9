"""hedgekit.papers.taha.noise_study: one run's numbers against the protocol functions they come from, the
summary over runs (paired rows in run order) and the study loop (models and data faked)."""
import numpy as np
import pytest
import torch

from hedgekit.errors import InputError
from hedgekit.evaluation import metrics as M
from hedgekit.papers.taha import noise_study as NS
from hedgekit.papers.taha import protocol as P
from hedgekit.papers.taha.experiments import NOISE_ROWS
from hedgekit.zoo import Spec


def _models():
    torch.manual_seed(0)
    return {label: Spec(kind=kind, data="fashion", dim=4, recipe=recipe).build().eval()
            for label, (kind, recipe) in NOISE_ROWS.items()}


def _data(n, seed):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 10
    x = (rng.random((n, 28, 28)) * 60 + y[:, None, None] * 19).astype(np.uint8)  # class sets the brightness
    return {"images": x, "labels": y, "ambiguous": rng.random(n) < 0.2}


def test_measure_run_against_the_protocol():
    models, test = _models(), _data(200, 1)
    train = _data(300, 2)
    train["flipped"] = np.random.default_rng(3).random(300) < 0.3
    out = NS.measure_run(models, 4, test, train)
    emb, u = P.embed(models[NS.HET], test["images"])
    rows = P.cleaning_rows(emb, u, test["labels"], seed=4)
    assert out["map"][NS.HET] == pytest.approx(rows["map"])
    assert out["map"]["random cleaning 20%"] == pytest.approx(rows["random"])
    assert out["map"]["uncertainty cleaning 20%"] == pytest.approx(rows["uncertain"])
    assert out["map"]["clean subset only"] == pytest.approx(
        P.retrieval_metrics(P.embed(models["clean subset only"], test["images"])[0], test["labels"], 4)["map"])
    q, g = P.split(test["labels"], 4)
    removed = g[np.argsort(-u[g])[:int(round(0.2 * len(g)))]]  # brute force: the most uncertain fifth
    assert out["ambiguous_removed"] == pytest.approx(test["ambiguous"][removed].mean())
    assert out["ambiguous_gallery"] == pytest.approx(test["ambiguous"][g].mean())
    ap = M.retrieval_average_precision(emb[q], test["labels"][q], emb[g], test["labels"][g])
    assert out["r"] == pytest.approx(P.ap_vs_uncertainty(ap, u[q])["r"])
    assert out["noise_rate"] == pytest.approx(train["flipped"].mean())
    assert set(out["detection"].detector) >= {"uncertainty", "small loss", "cleanlab"}
    odd = train["flipped"] | train["ambiguous"]
    _, u_t = P.embed(models[NS.HET], train["images"])
    assert out["odd_rate"] == pytest.approx(odd.mean())
    assert out["odd_top"] == pytest.approx(odd[np.argsort(-u_t, kind="stable")[:30]].mean())
    with pytest.raises(InputError, match="Hetero"):
        NS.measure_run({"clean subset only": models["clean subset only"]}, 0, test)


def test_summarise_keeps_run_order_and_detection_precisions():
    import pandas as pd

    def run(k):
        det = pd.DataFrame([{"detector": d, "fraction": f, "precision": k / 10 + i, "n": 1, "recall": 0.0}
                            for i, d in enumerate(("uncertainty", "small loss", "cleanlab")) for f in (0.05, 0.1)]
                           + [{"detector": "cleanlab (own threshold)", "fraction": 0.3, "precision": 9.0, "n": 1,
                               "recall": 0.0}])
        return {"map": {NS.HET: 0.5 + k, "random cleaning 20%": 0.4 + k}, "r": -k, "noise_rate": 0.38,
                "detection": det}

    s = NS.summarise([run(1), run(2), run(3)])
    assert s["map"][NS.HET].values == (1.5, 2.5, 3.5) and s["runs"] == 3 and s["r"] == [-1.0, -2.0, -3.0]
    assert s["detection"][("small loss", 0.1)].values == pytest.approx((1.1, 1.2, 1.3))
    assert ("cleanlab (own threshold)", 0.3) not in s["detection"] and s["noise_rate"][0] == pytest.approx(0.38)
    assert "ambiguous_removed" not in s
    with pytest.raises(InputError):
        NS.summarise([])


def test_run_study_loads_every_row_per_run_and_measures_with_the_runs_seed(monkeypatch):
    loaded, measured = [], []
    monkeypatch.setattr(NS, "triplet_data", lambda spec, split="train": {"split": split, "seed": spec.seed})
    monkeypatch.setattr(NS, "measure_run", lambda models, seed, test, train=None: measured.append(
        (sorted(models), seed, test["split"], train)) or {"map": {NS.HET: seed / 10}, "r": 0.0})
    res = NS.run_study(False, n_runs=2, seed=3, steps=50, detection=False, load=lambda s: loaded.append(s.name))
    assert loaded[:3] == [s.name for s in (res["specs"][label][0] for label in NOISE_ROWS)] and len(loaded) == 6
    assert all(n.endswith(("paper50-s3", "paper50-s4")) for n in loaded)
    assert [(m[1], m[2], m[3]) for m in measured] == [(3, "test", None), (4, "test", None)]
    assert res["map"][NS.HET].values == (0.3, 0.4)


def test_run_study_independent_contrast_uses_the_table2_recipes(monkeypatch):
    loaded = []
    monkeypatch.setattr(NS, "triplet_data", lambda spec, split="train": {})
    monkeypatch.setattr(NS, "measure_run", lambda models, seed, test, train=None: {"map": {NS.HET: 0.5}, "r": 0.0})
    NS.run_study(True, n_runs=1, detection=False, load=lambda s: loaded.append(s.name), independent=True)
    assert loaded == ["triplet-fashion-d16-clean-fast-s0", "triplet-fashion-d16-noisy-fast-s0",
                      "het-fashion-d16-noisy-fast-s0"]


def test_run_study_scores_detection_on_a_fixed_subset(monkeypatch):
    seen = []
    full = {"labels": np.arange(100) % 10, "flipped": np.arange(100) < 30}
    monkeypatch.setattr(NS, "triplet_data", lambda spec, split="train": full if split == "train" else {})
    monkeypatch.setattr(NS, "measure_run", lambda models, seed, test, train=None: seen.append(train) or
                        {"map": {NS.HET: 0.5}, "r": 0.0})
    NS.run_study(True, n_runs=2, load=lambda s: None, detect_images=40)
    assert all(len(t["labels"]) == 40 for t in seen)
    assert np.array_equal(seen[0]["flipped"], seen[1]["flipped"])  # the same subset in every run
    assert np.array_equal(seen[0]["labels"], full["labels"][np.sort(np.random.default_rng(0).permutation(100)[:40])])


def test_cleaning_pairs_are_the_runs_paired_differences_in_points():
    from hedgekit.papers.verdict import Spread

    s = {"map": {"random cleaning 20%": Spread([0.60, 0.62, 0.61]),
                 "uncertainty cleaning 20%": Spread([0.61, 0.61, 0.64])}}
    t = NS.cleaning_pairs(s)
    assert list(t.index) == [0, 1, 2]
    assert t["uncertainty − random"].tolist() == pytest.approx([1.0, -1.0, 3.0])
    assert t["random cleaning 20%"].tolist() == pytest.approx([60.0, 62.0, 61.0])


def test_detection_frame_sets_each_precision_beside_the_base_rate():
    from hedgekit.papers.verdict import Spread

    s = {"detection": {("uncertainty", 0.1): Spread([0.2, 0.4]), ("small loss", 0.05): Spread([0.7, 0.7])},
         "noise_rate": Spread([0.38, 0.38])}
    t = NS.detection_frame(s).set_index(["detector", "removed %"])
    assert t.loc[("uncertainty", 10), "precision"] == pytest.approx(0.3)
    assert t.loc[("uncertainty", 10), "± std"] == pytest.approx(np.std([0.2, 0.4], ddof=1))
    assert t.loc[("uncertainty", 10), "above base rate"] == pytest.approx(-0.08)
    assert t.loc[("small loss", 5), "above base rate"] == pytest.approx(0.32)
    with pytest.raises(InputError, match="detection"):
        NS.detection_frame({"map": {}})
