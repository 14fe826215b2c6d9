"""Tests of hedgekit.zoo.names: every spec has one name, no two specs share one, and a spec comes back whole from
what its checkpoint records (names are never parsed back into specs)."""
from dataclasses import asdict, replace

import pytest

import hedgekit.zoo as zoo
from hedgekit.errors import InputError
from hedgekit.zoo import Spec, store

pytestmark = pytest.mark.filterwarnings("ignore:Converting a tensor with requires_grad=True to a scalar")


@pytest.mark.parametrize(
    "spec, name",
    [
        (Spec(), "hib-n2-d2-c1-beta0.0001-paper-s0"),
        (Spec(beta=1e-6), "hib-n2-d2-c1-beta1e_06-paper-s0"),
        (Spec(beta=0.0, components=2, dim=3), "hib-n2-d3-c2-beta0-paper-s0"),
        (Spec(kind="point", loss="hard", margin=1.0), "point-n2-d2-hard-m1-paper-s0"),
        (Spec(kind="point", loss="hard", margin=0.5, n_digits=3, seed=12), "point-n3-d2-hard-m0.5-paper-s12"),
        (Spec(kind="point", preset="fast"), "point-n2-d2-fast-s0"),
        (Spec(n_digits=3, dim=4, components=2, beta=2.5e-5, preset="fast", steps=150, seed=7),
         "hib-n3-d4-c2-beta2.5e_05-fast150-s7"),
        (Spec(dim=3, samples=8), "hib-n2-d3-c1-beta0.0001-k8-paper-s0"),
        (Spec(samples=4, preset="fast", steps=20), "hib-n2-d2-c1-beta0.0001-k4-fast20-s0"),
    ],
)
def test_name_round_trip(spec, name):
    assert spec.name == name
    back = _recorded(spec)
    assert back == spec and back.name == name


def _recorded(spec):
    """``spec`` as a checkpoint gives it back: read whole from the metadata `train_spec` writes."""
    return store.recorded_spec({"name": spec.name, "spec": asdict(spec)})


def _every_experiment_spec() -> list:
    """Every spec the papers' notebooks use (papers/*/experiments.py), FAST and full."""
    from hedgekit.papers import hib, spe, taha
    from hedgekit.repro.catalog import NOTEBOOKS

    notebooks = [nb for group in NOTEBOOKS.values() for nb in group]
    specs = [s for paper in (hib, spe, taha) for nb in notebooks for fast in (True, False)
             for s in paper.experiments.notebook_specs(nb, fast)]
    return specs + hib.experiments.all_specs(True) + hib.experiments.all_specs(False)


# one other value per field, to change one setting of a spec at a time (values a kind refuses are skipped)
_OTHER_VALUES = {"dim": (3, 16), "n_digits": (1, 3), "components": (2,), "beta": (0.0, 1e-6, 2.5e-5),
                 "samples": (2, 9), "preset": ("fast", "paper"), "steps": (None, 99), "seed": (0, 1), "loss": ("hard",),
                 "margin": (0.5,), "sampler": ("naive", "intersection"), "init_var": ("eps", "unit"),
                 "data": ("ndigit", "lshapes", "fashion"),
                 "recipe": ("main", "aug", "fig4", "noisy", "clean", "longtail")}


def _neighbours(spec) -> list:
    """The valid specs that differ from ``spec`` in one setting."""
    out = []
    for field, values in _OTHER_VALUES.items():
        for value in values:
            try:
                out.append(replace(spec, **{field: value}))
            except (InputError, TypeError):  # a value the kind refuses, or a field it does not have
                pass
    return out


def test_a_name_names_one_spec():
    """The property the names exist for, without reading a name back: no two different specs share a name, over
    every spec of every notebook and every shipped checkpoint, and every spec one setting away from each."""
    shipped = store.shipped_specs()
    assert [s.name for s in shipped] == zoo.shipped_names() and len(shipped) >= 12  # point, hib, pn and spe
    specs = _every_experiment_spec()
    assert {s.kind for s in specs} == set(zoo.METHODS) and len(specs) > 100
    every = set(specs) | set(shipped)
    every |= {n for s in list(every) for n in _neighbours(s)}
    names = {}
    for spec in every:
        names.setdefault(spec.name, []).append(spec)
    assert len(every) > 1000 and {name: same for name, same in names.items() if len(same) > 1} == {}


def test_every_shipped_checkpoint_and_experiment_spec_round_trips_through_its_recorded_spec():
    """The store reads a checkpoint's spec whole from its metadata (`store.recorded_spec`), not from its name:
    every spec of every notebook comes back from what `train_spec` records, and every shipped checkpoint, whose
    flat spec predates the spec types (``loss="vib"``, ``sampler="none"``), records the spec of its own name."""
    import torch

    for spec in _every_experiment_spec():
        back = store.recorded_spec({"name": spec.name, "spec": asdict(spec)})
        assert back == spec and type(back) is type(spec)
    for name in zoo.shipped_names():
        meta = torch.load(store.SHIPPED_DIR / f"{name}.pt", map_location="cpu", weights_only=True)["meta"]
        spec = store.recorded_spec(meta)
        assert spec.name == name and zoo.find_checkpoint(spec) == store.SHIPPED_DIR / f"{name}.pt"


@pytest.mark.parametrize("spec", [
    Spec(),
    Spec(kind="pn", data="ndigit", n_digits=3, dim=3, preset="fast", seed=2),
    Spec(kind="spe", data="lshapes", dim=2, preset="fast"),
    Spec(kind="spe", data="ndigit", n_digits=2, dim=2, sampler="naive", samples=27, recipe="fig4", preset="paper", seed=1),
    Spec(kind="spe", data="lshapes", dim=3, preset="paper", steps=400),
    Spec(kind="spe", n_digits=3, dim=3, steps=12000, init_var="eps"),
])
def test_prototype_name_round_trip(spec):
    again = _recorded(spec)
    assert again == spec and again.name == spec.name


def test_prototype_names_are_readable_and_normalised():
    assert Spec(kind="spe").name == "spe-n2-d2-intersection1-paper-s0"  # sec. 4.2: intersection, s = 1
    assert Spec(kind="spe", data="lshapes").name == "spe-lshapes-d2-intersection8-paper-s0"  # App. A.2: 8 samples
    assert Spec(kind="spe", recipe="fig4", sampler="naive", samples=9, preset="fast").name == \
        "spe-n2-d2-naive9-fig4-fast-s0"
    assert Spec(kind="spe", data="lshapes").n_digits == 2  # fixed by the data set
    assert Spec(kind="spe").label == "SPE" and Spec(kind="pn").label == "PN"
    assert Spec(kind="spe", sampler="naive", samples=9).label == "SPE (naive, s=9)"
    # settings that do not apply to a kind are refused, not ignored: one name, one spec
    for kwargs, field in ((dict(kind="point", beta=0.5), "beta"), (dict(kind="pn", beta=0.5), "beta"),
                          (dict(kind="pn", samples=9, sampler="naive"), "sampler, Spec.samples"),
                          (dict(kind="spe", data="lshapes", n_digits=3), "n_digits applies to N-digit MNIST only")):
        with pytest.raises(InputError, match=field):
            Spec(**kwargs)
    assert Spec(kind="pn", components=1) == Spec(kind="pn")  # every kind but HIB has one component


@pytest.mark.parametrize("spec", [
    Spec(kind="het", dim=8, recipe="aug"), Spec(kind="triplet", dim=8, preset="fast", seed=3),
    Spec(kind="het", data="fashion", dim=8, recipe="noisy"), Spec(kind="triplet", data="fashion", dim=4, recipe="clean"),
    Spec(kind="het", data="fashion", dim=8, recipe="longtail", steps=99)])
def test_triplet_name_round_trip(spec):
    assert _recorded(spec) == spec and spec.family == "triplets"


@pytest.mark.parametrize("method,budget,seed,name", [
    ("ce", "paper", 0, "url-ce-paper-s0"),
    ("infonce_2v", "converged-lr0.5x", 2, "url-infonce_2v-converged-lr0.5x-s2"),
    ("mcinfonce_2v", "converged-lr2x", 17, "url-mcinfonce_2v-converged-lr2x-s17"),
])
def test_url_run_names_round_trip(url_defined, method, budget, seed, name):
    spec = zoo.URLSpec(method, budget, seed)
    assert spec.name == name
    assert Spec(kind="url", method=method, budget=budget, seed=seed) == spec
    assert spec.kind == spec.family == "url" and "url" not in zoo.METHODS  # METHODS: the EmbeddingNet models


@pytest.mark.parametrize("method,budget,match", [
    ("nope", "paper", "unknown method"),
    ("ce", "huge", "budget must be one of"),
    ("ce", "converged-lr0x", "budget must be one of"),  # a sweep factor must be > 0
    ("ce", "converged-lrx", "budget must be one of"),
    ("ce-2", "paper", "must be a method name"),  # a dash would make the name ambiguous
    ("ce", "converged-lr0.50x", "budget must be one of"),  # one budget, one name: converged-lr0.5x
])
def test_url_run_bad_specs_raise(url_defined, method, budget, match):
    with pytest.raises(InputError, match=match):
        zoo.URLSpec(method, budget)
