"""hedgekit.papers.taha.experiments: which zoo specs each table uses, FAST vs full."""
from dataclasses import asdict

import pytest

from hedgekit.errors import InputError
from hedgekit.papers.taha import experiments as E
from hedgekit.zoo import recorded_spec


def test_specs_per_table_and_mode():
    for fast, runs in ((True, E.FAST_RUNS), (False, E.FULL_RUNS)):
        t1, t2, lt = E.table1_specs(fast), E.table2_specs(fast), E.longtail_specs(fast)
        assert list(t1) == list(E.TABLE1_ROWS) and list(t2) == list(E.TABLE2_ROWS)
        for group, data in ((t1, "ndigit"), (t2, "fashion"), (lt, "fashion")):
            for label, specs in group.items():
                assert len(specs) == runs and len({s.seed for s in specs}) == runs
                assert all(s.data == data and s.preset == ("fast" if fast else "paper") and s.dim == E.DIM for s in specs)
        assert [s.recipe for s in t1["Tri + Aug + Hetero"]] == ["aug"] * runs
        assert t2["Tri + Hetero on noisy"][0].kind == "het" and t2["clean subset only"][0].recipe == "clean"


def test_notebook_specs_are_distinct_valid_names():
    specs = E.notebook_specs("08_het_triplet_retrieval.ipynb", fast=False, n_runs=3)
    assert len(specs) == len({s.name for s in specs}) == 12 * 3  # 9 rows + the noise study's 3 (FULL mode)
    assert len(E.notebook_specs("08", fast=False)) == 12 * E.FULL_RUNS
    assert all(recorded_spec({"name": s.name, "spec": asdict(s)}) == s for s in specs)  # what a checkpoint records
    assert [s.seed for s in specs[:12]] == [0] * 12  # run by run: a cut-short cache still has whole runs
    assert {s.recipe for s in specs} >= {"clean", "noisy", "ambclean", "ambnoisy"}
    noise = [s.name for row in E.noise_specs(False, n_runs=3).values() for s in row]
    assert set(noise) <= {s.name for s in specs}
    fast = E.notebook_specs("08", fast=True)  # FAST mode does not run the study: nothing of it to train
    assert len(fast) == 9 * E.FAST_RUNS and not {s.recipe for s in fast} & {"ambclean", "ambnoisy"}
    assert E.notebook_specs("07_spe_ndigit.ipynb", fast=True) == []


def test_runs_override_and_bad_runs():
    assert [s.seed for s in E.table1_specs(False, seed=4, n_runs=2)["Tri"]] == [4, 5]
    with pytest.raises(InputError, match="runs"):
        E.table2_specs(True, n_runs=0)


def test_noise_specs_are_the_image_dependent_recipes_with_new_names():
    specs = E.noise_specs(False, n_runs=3, steps=500)
    assert list(specs) == list(E.NOISE_ROWS)
    assert [s.recipe for s in specs["clean subset only"]] == ["ambclean"] * 3
    assert specs["Tri + Hetero on noisy"][1].name == "het-fashion-d16-ambnoisy-paper500-s1"
    assert all(recorded_spec({"name": s.name, "spec": asdict(s)}) == s for v in specs.values() for s in v)
    # the independent-noise contrast keeps its names (cached checkpoints stay valid)
    assert E.table2_specs(True)["Tri on noisy"][0].name == "triplet-fashion-d16-noisy-fast-s0"


def test_triplet_data_image_dependent_recipe(monkeypatch):
    """ambnoisy: 38% of ALL labels flip inside look-alike groups, never on clean-subset or blended items; 10% of
    train and test images are blended; ambclean is the clean subset (0.5%) of the same data."""
    from types import SimpleNamespace

    import numpy as np

    from hedgekit import zoo
    from hedgekit.data.subsets import FASHION_LOOKALIKES
    from hedgekit.zoo import Spec, recipes

    rng = np.random.default_rng(0)
    sets = {s: SimpleNamespace(images=rng.integers(0, 255, (n, 8, 8), dtype=np.uint8), labels=np.arange(n) % 10)
            for s, n in (("train", 6000), ("test", 2000))}
    monkeypatch.setattr(recipes, "load_fashion", lambda split="train": sets[split])
    recipes._ambiguous_fashion.cache_clear()
    try:
        spec = Spec(kind="het", data="fashion", dim=8, recipe="ambnoisy")
        d = zoo.triplet_data(spec)
        assert d["flipped"].mean() == pytest.approx(0.38, abs=0.02) and d["ambiguous"].mean() == pytest.approx(0.1)
        assert not (d["flipped"] & (d["clean"] | d["ambiguous"])).any() and d["clean"].mean() == pytest.approx(0.005)
        assert np.array_equal(d["true"], sets["train"].labels) and np.array_equal(d["labels"] != d["true"], d["flipped"])
        group_of = {c: g for g in FASHION_LOOKALIKES for c in g}
        assert all(d["labels"][i] in group_of[int(d["true"][i])] for i in np.flatnonzero(d["flipped"]))
        d["labels"][:] = -1  # callers get copies
        assert (zoo.triplet_data(spec)["labels"] >= 0).all()
        test = zoo.triplet_data(spec, "test")
        assert np.array_equal(test["labels"], sets["test"].labels) and test["ambiguous"].mean() == pytest.approx(0.1)
        clean = zoo.triplet_data(Spec(kind="triplet", data="fashion", dim=8, recipe="ambclean"))
        assert len(clean["labels"]) == 30 and not clean["flipped"].any()
    finally:
        recipes._ambiguous_fashion.cache_clear()
