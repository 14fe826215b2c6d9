"""hedgekit.repro.measured: the measures a notebook takes from a trained model, recorded in the ledger by
``--train-missing`` as each model ends and by ``--record-cached`` for the checkpoints already here. A stand-in group
("toy": the model's seed read back) keeps the tests free of data and training."""
from types import SimpleNamespace

import pytest

from hedgekit import cli, zoo
from hedgekit.errors import InputError
from hedgekit.repro import catalog, measured
from hedgekit.repro import pool as P
from hedgekit.zoo import Spec, ledger


class _Model:
    """A stand-in trained model: ``cpu()`` returns itself, ``seed`` is what the toy group measures."""

    def __init__(self, seed):
        self.seed, self.moved = seed, False

    def cpu(self):
        self.moved = True
        return self


@pytest.fixture
def toy_group(monkeypatch, tmp_path):
    """Every D = 1 spec has the group "toy" (``{"seed": model.seed, "half": seed / 2}``); the cache is tmp_path."""
    monkeypatch.setenv("HEDGEKIT_DATA", str(tmp_path / "data"))
    groups = {"toy": lambda model, meta: {"seed": model.seed, "half": model.seed / 2}}
    monkeypatch.setattr(measured, "model_measures", lambda spec: groups if spec.dim == 1 else {})
    return groups


def _checkpoint(tmp_path, spec, metrics=None):
    path = tmp_path / "ckpt" / f"{spec.name}.pt"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(spec.name.encode())
    return {"source": "trained now", "path": str(path), "device": "cpu", "train_seconds": 2.0,
            "metrics": metrics or {"knn_corrupt": 0.5}, "eval_images": 100}


def test_the_catalog_names_notebook_03s_number_line_and_notebook_07s_table_2_cells_for_their_seed_models(monkeypatch):
    """Each paper's groups for its own specs (notebook 04's plurality KNN too), each group calling its measure (stand-ins here, with the model and
    the head its checkpoint's metadata records); every other spec has none."""
    from hedgekit.papers import hib, spe

    monkeypatch.setattr(hib.experiments, "number_line_measures", lambda model: {"line of": model})
    lines = hib.experiments.number_line_specs(False)
    for spec in lines["point_d1"] + lines["hib_d1"]:
        groups = catalog.model_measures(spec)
        assert list(groups) == ["number_line"] and groups["number_line"]("m", {}) == {"line of": "m"}
    monkeypatch.setattr(spe.protocol, "table2_cells", lambda model, head, n: {"cells of": (model.name, n,
                                                                                           type(head).__name__)})
    pn_meta, spe_meta = {"head": {"kind": "pn"}}, {"head": {"kind": "spe", "dim": 2, "train_sampler": "intersection",
                                                            "train_samples": 1, "gamma": 0.5}}
    for (n, d), seeded in spe.experiments.table2_seeds_by_setting(False).items():
        for label, meta in (("PN", pn_meta), ("SPE", spe_meta)):
            for spec in seeded[label]:
                groups = catalog.model_measures(spec)
                model = SimpleNamespace(name="m", config={"n_digits": n})
                assert list(groups) == ["table2_cells"]
                assert groups["table2_cells"](model, meta) == {"cells of": ("m", n, label)}
    monkeypatch.setattr(hib.experiments, "plurality_measures", lambda model: {"votes of": model})
    for (n, d, label), specs in hib.experiments.table1_seed_specs(False).items():
        for spec in specs:  # App. G's plurality KNN of Table 1's point and MoG-1 models, at every seed
            groups = catalog.model_measures(spec)
            wanted = (n, d) in hib.experiments.TABLE1_SETTINGS and label in ("point", "MoG-1")
            assert list(groups) == (["plurality"] if wanted else [])
            assert not wanted or groups["plurality"]("m", {}) == {"votes of": "m"}
    table2 = spe.experiments.table2_specs(False)[(2, 3)]
    others = [table2["HIB"], Spec(kind="hib", components=2, preset="paper"), Spec(kind="point", dim=2, preset="fast")]
    assert all(catalog.model_measures(spec) == {} for spec in others)


def test_a_group_the_spec_has_not_is_refused_naming_those_it_has(toy_group):
    assert measured.measure_of(Spec(kind="point", dim=1, preset="fast"), "toy") is toy_group["toy"]
    with pytest.raises(InputError, match=r"has no measure group 'adjacency'; its groups: toy"):
        measured.measure_of(Spec(kind="point", dim=1, preset="fast"), "adjacency")
    with pytest.raises(InputError, match=r"its groups: none"):
        measured.measure_of(Spec(kind="point", dim=2, preset="fast"), "toy")


def test_measure_records_measures_each_group_on_the_cpu_and_builds_its_record(toy_group, tmp_path):
    spec = Spec(kind="point", dim=1, preset="fast", seed=5)
    model = _Model(5)
    [rec] = measured.measure_records(spec, model, _checkpoint(tmp_path, spec))
    assert model.moved and (rec["model"], rec["group"], rec["measures"]) == (spec.name, "toy", {"seed": 5, "half": 2.5})
    assert rec["code_key"] == ledger.code_key(spec) and rec["train_seconds"] == 2.0
    assert measured.measure_records(Spec(kind="point", dim=2, preset="fast"), model, _checkpoint(tmp_path, spec)) == []
    assert measured.measure_records(spec, model, {"source": "trained now"}) == []  # no checkpoint file: no record


def test_train_missing_records_the_notebooks_groups_beside_the_trainers_as_each_model_ends(toy_group, tmp_ledger,
                                                                                         monkeypatch, tmp_path):
    """Two D = 1 models trained in this process: each leaves its table1 record and its toy record; a D = 2 model
    only its table1 record."""
    specs = [Spec(kind="point", dim=1, preset="fast", seed=s) for s in (1, 2)] + [Spec(kind="point", preset="fast")]
    monkeypatch.setattr(zoo, "load_or_train",
                        lambda spec, progress=True, device="cpu", **_: (_Model(spec.seed), _checkpoint(tmp_path, spec)))
    monkeypatch.setattr(P, "find_checkpoint", lambda spec: None)
    result = P.train_missing([("03", s) for s in specs], echo=lambda line: None)
    assert len(result["trained"]) == 3 and not result["unrecorded"]
    got = sorted((r["model"], r["group"], r["measures"].get("seed")) for r in ledger.records("hib"))
    assert got == sorted([(specs[0].name, "table1", None), (specs[0].name, "toy", 1.0),
                          (specs[1].name, "table1", None), (specs[1].name, "toy", 2.0),
                          (specs[2].name, "table1", None)])


def test_a_group_that_contradicts_the_ledger_is_reported_and_the_others_still_recorded(toy_group, tmp_ledger,
                                                                                     monkeypatch, tmp_path):
    spec = Spec(kind="point", dim=1, preset="fast", seed=3)
    tmp_ledger(spec, {"seed": 4.0, "half": 2.0}, group="toy")  # what another measurement recorded
    monkeypatch.setattr(zoo, "load_or_train", lambda spec, progress=True, device="cpu", **_: (
        _Model(spec.seed), _checkpoint(tmp_path, spec)))
    monkeypatch.setattr(P, "find_checkpoint", lambda spec: None)
    lines = []
    result = P.train_missing([("03", spec)], echo=lines.append)
    assert list(result["unrecorded"]) == [spec.name]
    assert any(f"{spec.name}: NOT RECORDED in the ledger (toy)" in line for line in lines)
    assert ledger.held(spec, "table1") is not None and ledger.held(spec, "toy")["measures"]["seed"] == 4.0


def test_a_measure_that_fails_leaves_the_model_trained_cached_and_recorded_and_says_so(toy_group, tmp_ledger,
                                                                                    monkeypatch, tmp_path):
    def broken(model, meta):
        raise RuntimeError("no test images")

    monkeypatch.setattr(measured, "model_measures", lambda spec: {"toy": broken})
    spec = Spec(kind="point", dim=1, preset="fast", seed=6)
    monkeypatch.setattr(zoo, "load_or_train", lambda spec, progress=True, device="cpu", **_: (
        _Model(spec.seed), _checkpoint(tmp_path, spec)))
    monkeypatch.setattr(P, "find_checkpoint", lambda spec: None)
    lines = []
    result = P.train_missing([("03", spec)], echo=lines.append)
    assert result["trained"] == [spec.name] and not result["failed"]
    assert "RuntimeError: no test images" in result["unrecorded"][spec.name]
    assert any("its notebook measures NOT RECORDED" in line and "--record-cached" in line for line in lines)
    assert ledger.held(spec, "table1") is not None and ledger.held(spec, "toy") is None


def test_record_cached_measures_records_each_missing_group_once_and_names_what_it_could_not(toy_group, tmp_ledger,
                                                                                           monkeypatch, tmp_path):
    here, absent = Spec(kind="point", dim=1, preset="paper", seed=1), Spec(kind="point", dim=1, preset="paper", seed=2)
    loads = []

    def fake_load_model(spec, progress=False):
        loads.append(spec.name)
        return _Model(spec.seed), {**_checkpoint(tmp_path, spec), "source": "cache"}

    monkeypatch.setattr(measured, "find_checkpoint", lambda spec: tmp_path / "x.pt" if spec == here else None)
    monkeypatch.setattr(measured, "load_model", fake_load_model)
    written, passed = measured.record_cached_measures([here, absent, here, Spec(kind="point", preset="paper")])
    assert [(r["model"], r["group"], r["measures"]) for r in written] == [(here.name, "toy", {"seed": 1, "half": 0.5})]
    assert passed == [f"{absent.name}: toy: no checkpoint on this machine"] and loads == [here.name]
    assert measured.record_cached_measures([here]) == ([], []) and loads == [here.name]  # held: nothing measured


def test_record_cached_on_the_command_line_writes_the_trainers_and_the_notebooks_groups(toy_group, tmp_ledger,
                                                                                       monkeypatch, tmp_path, capsys):
    from hedgekit.papers import hib, spe, taha

    spec = Spec(kind="point", dim=1, preset="paper", seed=1)
    monkeypatch.setattr(catalog, "NOTEBOOKS", {"x": ["03_a.ipynb"]})
    monkeypatch.setattr(hib.experiments, "notebook_specs", lambda nb, fast: [spec])
    for paper in (spe, taha):
        monkeypatch.setattr(paper.experiments, "notebook_specs", lambda nb, fast: [])
    monkeypatch.setattr(measured, "find_checkpoint", lambda s: tmp_path / "x.pt")
    monkeypatch.setattr(measured, "load_model", lambda s, progress=False: (_Model(s.seed), _checkpoint(tmp_path, s)))
    monkeypatch.setattr("hedgekit.repro.reproduce.record_cached", lambda specs, folder=None: ([], ["a table1 line"]))
    assert cli.main(["reproduce", "--record-cached", "--only", "03"]) == 0
    out = capsys.readouterr().out
    assert f"[ledger] recorded {spec.name} (toy, trained on cpu)" in out
    assert "[ledger] 1 record(s) written, 1 not recorded" in out
