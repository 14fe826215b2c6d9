"""hedgekit.zoo.ledger: records written and read back exactly, never overwritten silently, and the committed
ledger files well formed. Every test writes into a ledger of its own (the `tmp_ledger` fixture, tests/conftest.py);
only `test_the_committed_ledger_files_are_well_formed` reads the package's, and writes nothing."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pandas as pd
import pytest

import hedgekit.papers.url.recipe  # noqa: F401  (defines the URL runs, whose records url.jsonl holds)
from hedgekit.errors import InputError
from hedgekit.paths import PACKAGE_DIR, REPO_DIR as REPO
from hedgekit.zoo import SHIPPED_DIR, Spec, URLSpec, ledger, load_checkpoint

HIB = Spec(kind="hib", preset="fast", seed=3)
POINT = Spec(kind="point", preset="fast", seed=3)
TABLE1 = {"ap_clean": 0.9894603187725878, "knn_corrupt": 0.79, "tau_ap_clean": None, "var_ratio": 350.9953297890944,
          "eval_images": 2000}


def test_a_record_round_trips_through_the_file_and_pandas(tmp_ledger):
    rec = tmp_ledger(HIB, TABLE1)
    other = tmp_ledger(Spec(kind="pn", preset="fast", seed=1), {"seen_clean_acc": 0.5, "episodes": 20})
    path = tmp_ledger.folder / "hib.jsonl"
    line = path.read_text().splitlines()[0]
    assert json.loads(line) == rec and line == json.dumps(rec, sort_keys=True)  # one object per line, keys sorted
    assert rec["measures"] == {**TABLE1, "eval_images": 2000.0} and rec["group"] == "table1" and rec["seed"] == 3
    assert rec["spec"] == {"kind": "hib", "data": "ndigit", "n_digits": 2, "dim": 2, "preset": "fast", "seed": 3,
                           "steps": None, "components": 1, "beta": 1e-4, "samples": None}
    assert ledger.spec_of(rec) == HIB and rec["code_key"] == ledger.code_key(HIB) and len(rec["code_key"]) == 12
    assert rec["device"] == "cpu" and rec["tolerance"] == 0.0 and rec["train_seconds"] == 12.5
    assert rec["data_fingerprint"] == "20f6a746239647d1" and len(rec["checkpoint_sha256"]) == 64
    assert ledger.records() == [rec, other] and ledger.records("spe") == [other] and ledger.records("taha") == []
    read = pd.read_json(path, lines=True, dtype=False, convert_dates=False, precise_float=True)
    pd.testing.assert_frame_equal(read.reindex(columns=sorted({**ledger.FIELDS, **ledger.OPTIONAL_FIELDS})),
                                  ledger.frame("hib"))
    assert read.loc[0, "measures"] == rec["measures"]  # floats exactly, null for the undefined tau
    plain = pd.read_json(path, lines=True)  # pandas' defaults read it too, floats to within a few ulps
    assert list(plain["model"]) == [HIB.name] and plain.loc[0, "measures"]["ap_clean"] == pytest.approx(
        TABLE1["ap_clean"], rel=1e-15, abs=0)
    got = ledger.measures(HIB.name, "table1")
    assert math.isnan(got.pop("tau_ap_clean")) and got == {k: v for k, v in rec["measures"].items() if v is not None}
    assert ledger.measures(HIB.name, "quick_check") is None and ledger.measures("hib-nothing", "table1") is None


def test_the_ledger_folder_is_the_packages_unless_the_environment_names_one(tmp_ledger, monkeypatch):
    assert ledger.ledger_dir() == tmp_ledger.folder
    monkeypatch.delenv("HEDGEKIT_LEDGER")
    assert ledger.ledger_dir() == PACKAGE_DIR / "ledger"
    assert ledger.paper_of(POINT) == "hib" and ledger.paper_of(Spec(kind="spe", preset="fast")) == "spe"
    assert ledger.paper_of(Spec(kind="het", preset="fast")) == "taha"
    with pytest.raises(InputError, match="no ledger for paper 'nope'; the papers are hib, spe, taha, url"):
        ledger.ledger_path("nope")


def test_recording_what_is_held_again_writes_nothing(tmp_ledger):
    first = tmp_ledger(HIB, TABLE1)
    path = tmp_ledger.folder / "hib.jsonl"
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    again = dict(first, date="2030-01-01", commit="0" * 40, measures={**TABLE1, "tau_ap_clean": math.nan})
    assert ledger.append(again) == first  # the record held is returned; NaN and null are the same undefined measure
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before


def test_a_one_ulp_difference_on_the_cpu_is_a_conflict_that_names_both_values_and_both_checkpoints(tmp_ledger):
    first = tmp_ledger(HIB, TABLE1)
    path = tmp_ledger.folder / "hib.jsonl"
    before = path.read_bytes()
    ulp = math.nextafter(TABLE1["ap_clean"], 1.0)
    new = dict(first, checkpoint_sha256="f" * 64, measures={**first["measures"], "ap_clean": ulp})
    with pytest.raises(ledger.LedgerConflict) as err:
        ledger.append(new)
    text = str(err.value)
    assert isinstance(err.value, InputError) and "\n" not in text  # one paragraph
    assert f"ap_clean {TABLE1['ap_clean']!r} (ledger) against {ulp!r} (new)" in text
    assert HIB.name in text and "table1" in text and first["checkpoint_sha256"] in text and "f" * 64 in text
    assert "knn_corrupt" not in text and "never overwritten" in text and "delete the new checkpoint" in text
    assert path.read_bytes() == before
    with pytest.raises(ledger.LedgerConflict, match=r"var_ratio 350.9953297890944 \(ledger\) against absent"):
        ledger.append(dict(first, measures={k: v for k, v in first["measures"].items() if k != "var_ratio"}))
    with pytest.raises(ledger.LedgerConflict, match=r"tau_ap_clean null \(ledger\) against 0.5 \(new\)"):
        ledger.append(dict(first, measures={**first["measures"], "tau_ap_clean": 0.5}))


def test_a_cpu_record_names_its_processor_and_a_conflict_between_processors_names_both(tmp_ledger, tmp_path):
    """CPU training repeats bit for bit on one processor only: a record keeps the processor its checkpoint trained
    on (``meta["processor"]``, `hedgekit.zoo.store.trained_on`), and a conflict says on which each trained."""
    first = tmp_ledger(HIB, TABLE1)
    assert "processor" not in first  # a checkpoint that records none (trained before the field) gives none
    checkpoint = tmp_path / "elsewhere.pt"
    checkpoint.write_bytes(b"trained on another processor")
    meta = {"device": "cpu", "processor": "Processor B", "train_seconds": 3.0, "train_config": {}}
    other = ledger.build_record(HIB, "table1", {**TABLE1, "ap_clean": 0.5, "eval_images": 2000}, meta, checkpoint)
    assert other["processor"] == "Processor B" and other["tolerance"] == 0.0
    with pytest.raises(ledger.LedgerConflict, match=r"\(trained on cpu \(Processor B\)\).*another CPU"):
        ledger.append(other)
    with pytest.raises(InputError, match=r"processor \(int, expected str\)"):
        ledger.append(dict(other, processor=7))


def test_a_models_measures_are_read_from_its_papers_file_without_importing_another_paper(tmp_ledger):
    """A URL run's spec is known only once the URL paper is imported (`hedgekit.zoo.url_runs`): a process that
    has not imported it reads a HIB model's measures all the same, and reading every paper says what to import."""
    tmp_ledger(HIB, TABLE1)
    tmp_ledger(URLSpec("ce", "converged", 0), {"r1": 0.5}, group="benchmark")
    code = ("import sys\nfrom hedgekit.zoo import ledger\n"
            f"print(ledger.measures({HIB.name!r}, 'table1')['ap_clean'])\n"
            "assert 'hedgekit.papers' not in sys.modules\n"
            "try:\n    ledger.records()\nexcept ledger.InputError as exc:\n    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(REPO)}).stdout.splitlines()
    assert out[0] == repr(TABLE1["ap_clean"])
    assert "url.jsonl:1" in out[1] and "import hedgekit.papers.url.recipe" in out[1]


def test_check_compares_like_append_and_writes_nothing(tmp_ledger):
    first = tmp_ledger(HIB, TABLE1)
    path = tmp_ledger.folder / "hib.jsonl"
    before = path.read_bytes()
    assert ledger.check(dict(first, checkpoint_sha256="f" * 64)) == first  # agrees: the held record
    assert ledger.check(dict(first, group="another")) is None  # not held: nothing to contradict, nothing written
    with pytest.raises(ledger.LedgerConflict, match=r"ap_clean .* \(ledger\) against 0.5 \(new\)"):
        ledger.check(dict(first, measures={**first["measures"], "ap_clean": 0.5}))
    with pytest.raises(InputError, match="missing device"):
        ledger.check({k: v for k, v in first.items() if k != "device"})
    assert path.read_bytes() == before


@pytest.mark.parametrize("name, value", [("knn_corrupt", 0.79), ("var_ratio", 350.9953297890944)])
def test_a_gpu_record_agrees_within_its_tolerance_and_conflicts_beyond_it(tmp_ledger, name, value):
    """The tolerance is absolute for measures up to 1 and relative above (`hedgekit.zoo.ledger.agree`)."""
    first = tmp_ledger(HIB, TABLE1, device="cuda:0 (NVIDIA H200)")
    assert first["tolerance"] == ledger.GPU_TOLERANCE == 1e-6
    edge = ledger.GPU_TOLERANCE * max(1.0, value)
    for inside in (0.9 * edge, -0.9 * edge):
        assert ledger.append(dict(first, measures={**first["measures"], name: value + inside})) == first
    for outside in (1.1 * edge, -1.1 * edge):
        with pytest.raises(ledger.LedgerConflict, match=f"within 1e-06.*{name}"):
            ledger.append(dict(first, measures={**first["measures"], name: value + outside}))
    assert ledger.agree(None, math.nan, 0.0) and not ledger.agree(None, 0.0, 1.0) and ledger.agree(2.0, 2.0, 0.0)


def test_malformed_records_and_lines_are_refused_with_file_line_and_what_was_expected(tmp_ledger):
    rec = tmp_ledger(HIB, TABLE1)
    for bad, message in [({k: v for k, v in rec.items() if k != "device"}, "missing device"),
                         (dict(rec, seed="3"), r"seed \(str, expected int\)"),
                         (dict(rec, measures={"ap": "high"}), "measure 'ap' must be a finite number"),
                         (dict(rec, measures={"ap": math.inf}), "measure 'ap' must be a finite number"),
                         (dict(rec, model="hib-other"), "its spec builds 'hib-n2-d2-c1-beta0.0001-fast-s3'"),
                         (dict(rec, spec={**rec["spec"], "kind": "nope"}), "does not build a model spec"),
                         (dict(rec, colour="red"), "unknown colour"),
                         (dict(rec, job_seconds="long"), r"job_seconds \(str, expected float or int\)")]:
        with pytest.raises(InputError, match=message):
            ledger.append(bad)
    path = tmp_ledger.folder / "hib.jsonl"
    good = path.read_text()
    for text, message in [(good + "{not json\n", ":2: not JSON"), (good + "\n", ":2: empty line"),
                          (good + "[1, 2]\n", ":2: expected a JSON object"),
                          (good + good, ":2: .* is already recorded on line 1"),
                          (good.replace('"seed": 3,', '"seed": 3.5,'), r":1: wrong types: seed \(float")]:
        path.write_text(text)
        with pytest.raises(InputError, match=f"{path}{message}"):
            ledger.records()


def test_seeds_of_counts_the_seeds_of_one_spec_under_the_current_code_key(tmp_ledger):
    for seed in (0, 2, 5):
        tmp_ledger(Spec(kind="point", preset="fast", seed=seed), {"knn_clean": 0.5 + seed / 100})
    tmp_ledger(Spec(kind="point", preset="fast", dim=3, seed=1), {"knn_clean": 0.5})  # another spec
    old = tmp_ledger(Spec(kind="point", preset="fast", seed=7), {"knn_clean": 0.5})
    retired = dict(old, code_key="0123456789ab", seed=8, model=Spec(kind="point", preset="fast", seed=8).name,
                   spec={**old["spec"], "seed": 8})
    ledger.append(retired)  # a record of a recipe the code no longer trains: history, not a seed
    assert ledger.seeds_of(POINT) == [0, 2, 5, 7] and ledger.seeds_of(POINT, group="quick_check") == []
    assert ledger.measures(retired["model"], "table1") is None and ledger.held(POINT, "table1") is None
    assert ledger.held(Spec(kind="point", preset="fast", seed=2), "table1")["measures"] == {"knn_clean": 0.52}
    assert ledger.seeds_of(Spec(kind="point", preset="fast", steps=10)) == []  # another recipe, another code key


def test_ledger_meta_gives_a_record_in_a_checkpoints_form(tmp_ledger):
    rec = tmp_ledger(HIB, TABLE1, device="cuda:0 (NVIDIA H200)")
    meta = ledger.ledger_meta(HIB)
    assert meta["source"] == "ledger" and meta["eval_images"] == 2000 and isinstance(meta["eval_images"], int)
    assert math.isnan(meta["metrics"].pop("tau_ap_clean"))
    assert meta["metrics"] == {"ap_clean": TABLE1["ap_clean"], "knn_corrupt": 0.79, "var_ratio": TABLE1["var_ratio"]}
    assert meta["device"] == "cuda:0 (NVIDIA H200)" and meta["date"] == rec["date"] and meta["train_seconds"] == 12.5
    assert meta["train_config"]["steps"] == 300 and meta["sha256"] == rec["checkpoint_sha256"]
    assert meta["path"] == str(tmp_ledger.folder / "hib.jsonl") and ledger.ledger_meta(POINT) is None


def test_record_table1_reads_a_shipped_checkpoints_metadata(tmp_ledger):
    path = SHIPPED_DIR / "hib-n2-d2-c1-beta0.0001-paper-s0.pt"
    _, meta = load_checkpoint(path)
    rec = ledger.record_table1(path)
    assert rec["measures"] == {**meta["metrics"], "eval_images": 10000.0} and rec["device"] == "cpu"
    assert rec["model"] == meta["name"] and rec["data_fingerprint"] == meta["data"]["fingerprint"]
    assert rec["torch"] == meta["versions"]["torch"] and rec["train_seconds"] == meta["train_seconds"]
    assert ledger.record_table1(Spec(kind="hib", preset="paper")) == rec  # by spec: the same checkpoint, held
    assert len(ledger.records("hib")) == 1
    with pytest.raises(InputError, match="holds a pn model, whose checkpoint records quick_check, not table1"):
        ledger.record_table1(SHIPPED_DIR / "pn-n2-d2-paper-s0.pt")
    with pytest.raises(InputError, match="no checkpoint of hib-n2-d2-c1-beta0.0001-paper-s9 on this machine"):
        ledger.record_table1(Spec(kind="hib", preset="paper", seed=9))
    ledger.check_checkpoint(Spec(kind="hib", preset="paper"), dict(meta, path=str(path)))  # agrees: no error
    changed = dict(meta, path=str(path), metrics={**meta["metrics"], "knn_clean": 0.5})
    with pytest.raises(ledger.LedgerConflict, match=r"knn_clean 0.8814 \(ledger\) against 0.5 \(new\)"):
        ledger.check_checkpoint(Spec(kind="hib", preset="paper"), changed)


def test_record_cached_brings_home_the_checkpoints_held_here_once_and_names_the_rest(tmp_ledger):
    shipped = [Spec(kind="point", preset="paper"), Spec(kind="hib", preset="paper"), Spec(kind="pn", preset="paper")]
    missing = Spec(kind="hib", preset="paper", seed=9)
    written, passed = ledger.record_cached([*shipped, shipped[0], missing])  # a spec named twice is recorded once
    assert [r["model"] for r in written] == [s.name for s in shipped]
    assert [r["group"] for r in written] == ["table1", "table1", "quick_check"]
    assert passed == [f"{missing.name}: no checkpoint on this machine"]
    again, _ = ledger.record_cached(shipped)
    assert again == [] and len(ledger.records("hib")) == 2 and len(ledger.records("spe")) == 1


REAL = PACKAGE_DIR / "ledger"


@pytest.mark.parametrize("paper", ledger.PAPERS)
def test_the_committed_ledger_files_are_well_formed(paper):
    """Every record has every field with its type, its line is its sorted-keys JSON, lines are sorted, a (model,
    group) is held once per code key, and every code key is one the current code gives its spec, or retired."""
    path = ledger.ledger_path(paper, REAL)
    assert path.is_file(), f"{path} is missing (an empty file where a paper has no records yet)"
    recs = ledger.records(paper, REAL)  # every line checked (`ledger._checked`): fields, types, spec, measures
    lines = path.read_text().splitlines()
    assert len(lines) == len(recs)
    for line, rec in zip(lines, recs):
        assert line == json.dumps(json.loads(line), sort_keys=True, allow_nan=False, ensure_ascii=False)
        for field, types in ledger.FIELDS.items():
            assert isinstance(rec[field], types) and not isinstance(rec[field], bool), (rec["model"], field)
        assert set(rec) - set(ledger.FIELDS) <= set(ledger.OPTIONAL_FIELDS), rec["model"]
        assert rec.get("job_seconds", 1) > 0, rec["model"]
        assert all(v is None or isinstance(v, float) for v in rec["measures"].values()), rec["model"]
        spec = ledger.spec_of(rec)
        assert ledger.paper_of(spec) == paper and rec["model"] == spec.name and rec["seed"] == spec.seed
        assert rec["code_key"] == ledger.code_key(spec) or rec["code_key"] in ledger.RETIRED_CODE_KEYS, rec["model"]
        assert rec["tolerance"] == ledger.tolerance_for(rec["device"]) and len(rec["checkpoint_sha256"]) == 64
    keys = [(r["model"], r["group"], r["code_key"]) for r in recs]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    current = [(r["model"], r["group"]) for r in recs if r["code_key"] not in ledger.RETIRED_CODE_KEYS]
    assert len(set(current)) == len(current)


@pytest.mark.slow
def test_a_model_retrained_on_this_cpu_agrees_with_its_record_exactly(tmp_ledger):
    """The CPU's tolerance of 0 holds: a tiny `fast` model (5 steps) trained and recorded, then trained again from
    scratch (`hedgekit.zoo.store.train_spec`), measures bit for bit the same."""
    from hedgekit.zoo import load_or_train, store

    spec = Spec(kind="hib", preset="fast", steps=5)
    _, meta = load_or_train(spec, progress=False, device="cpu")
    rec = ledger.record_checkpoint(meta["path"])
    assert rec["measures"] == {**{k: None if math.isnan(v) else v for k, v in meta["metrics"].items()},
                               "eval_images": float(meta["eval_images"])}
    _, again = store.train_spec(spec, progress=False, device="cpu")
    group, measures = ledger.checkpoint_measures(spec, again)
    retrained = ledger.build_record(spec, group, measures, again, meta["path"])
    assert retrained["measures"] == rec["measures"]  # every measure equal (NaN as null)
    assert ledger.append(retrained) == rec  # agrees: nothing written
