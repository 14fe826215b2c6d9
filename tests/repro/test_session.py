"""hedgekit.repro.session: the header's full-mode timing is read from the recorded run, never typed; once a full-mode run
is over, its header quotes its own run time and no other."""
import json
import os
import re

import pytest

from hedgekit.paths import REPO_DIR
from hedgekit.repro.session import RUN_RECORD, Session, measured_full_mode, restate_header


def _record(path, fast=False, **run):
    rec = dict(notebook="08_het_triplet_retrieval.ipynb", status="ok", seconds=540.2, date="2026-11-23 14:39")
    rec.update(run)
    path.write_text(json.dumps({"fast": fast, "runs": [rec]}))
    return path


def test_the_full_mode_timing_is_the_recorded_run_time(tmp_path):
    txt = measured_full_mode("08_het_triplet_retrieval", _record(tmp_path / "run.json"))
    assert txt.startswith("measured 540 s on 2026-11-23 14:39 (`python -m hedgekit reproduce`, notebooks/report/run.json")
    assert "--only 08 --train-missing --jobs 2" in txt  # notebook 08 loads zoo checkpoints


def test_a_run_that_trained_models_reads_as_its_time_with_every_checkpoint_cached(tmp_path):
    txt = measured_full_mode("08_het_triplet_retrieval",
                             _record(tmp_path / "run.json", seconds=3000.4, trained=2, train_seconds=1200.0))
    assert txt.startswith("about 1800 s with every checkpoint cached: the run on 2026-11-23 14:39")
    assert "took 3000 s, 1200 s of them training the 2 model(s) it did not find" in txt


def test_no_record_a_fast_record_or_a_failed_run_says_not_measured(tmp_path):
    for path in (tmp_path / "absent.json", _record(tmp_path / "fast.json", fast=True),
                 _record(tmp_path / "failed.json", status="failed")):
        assert measured_full_mode("08_het_triplet_retrieval", path).startswith("no full-mode run recorded yet")
    (tmp_path / "bad.json").write_text("{not json")
    assert measured_full_mode("08_het_triplet_retrieval", tmp_path / "bad.json").startswith("no full-mode run")
    # a notebook without zoo checkpoints has no --train-missing to suggest
    assert "trains what it needs as it runs" in measured_full_mode("09_url_benchmark", tmp_path / "absent.json")


def test_the_header_timing_is_measured_never_typed(capsys):
    s = Session("08_het_triplet_retrieval")
    assert s.full_mode == measured_full_mode("08_het_triplet_retrieval")
    with pytest.raises(TypeError):
        Session("08_het_triplet_retrieval", full_mode="about 5 min (measured 289 s)")  # no typed timings
    assert RUN_RECORD.as_posix() == "notebooks/report/run.json"


def test_a_parameter_left_at_none_reads_as_the_default_not_none(capsys):
    s = Session("08_het_triplet_retrieval")
    s.configure(fast=False, seed=0, runs=None)
    assert "parameters: seed=0, runs=default" in s.markdown() and "None" not in s.markdown()


def test_the_device_parameter_is_where_a_missing_model_trains_and_the_model_comes_back_on_the_cpu(monkeypatch,
                                                                                                     tmp_path):
    """`Session.configure(device=DEVICE)` resolves "auto" once; `S.model` hands the device to `load_or_train`."""
    import torch

    from hedgekit.errors import InputError
    from hedgekit.repro.report import read_manifest
    from hedgekit.zoo import Spec

    asked = []

    class OnDevice(torch.nn.Linear):  # a model that says where it was sent, without needing that device
        def cpu(self):
            self.where = "cpu"
            return self

    def fake_load_model(spec, progress=False, **kwargs):
        asked.append(kwargs.get("device"))
        model = OnDevice(1, 1)
        model.where = kwargs.get("device")
        return model, {"source": "trained now", "path": "", "train_config": {"steps": 3}, "train_seconds": 1.0,
                       "device": f"{model.where} (as train_spec records it)"}

    monkeypatch.setattr("hedgekit.repro.session.load_model", fake_load_model)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # a GPU machine, as far as auto can tell
    s = Session("08_het_triplet_retrieval")
    s.configure(fast=True, device="auto", report_dir=str(tmp_path))
    assert s.device == "cuda" and "device" not in s.params  # not a notebook parameter of the header
    model = s.model(Spec(kind="point", preset="fast"), progress=False)
    assert asked == ["cuda"] and model.where == "cpu"  # trained on the GPU, evaluated by the cells on the CPU
    s.configure(fast=True, device="cpu", report_dir=str(tmp_path))
    s.model(Spec(kind="point", preset="fast", seed=1), progress=False)
    assert asked == ["cuda", "cpu"]
    s.finish()
    assert [c.device for c in s.checkpoints] == ["cuda (as train_spec records it)", "cpu (as train_spec records it)"]
    meta = [e["info"] for e in read_manifest(tmp_path) if e["kind"] == "meta"]
    assert [m["device"] for m in meta] == ["cpu"] and meta[0]["checkpoints"][0]["device"].startswith("cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(InputError, match="CUDA is not available"):
        s.configure(fast=True, device="cuda")


def test_cached_meta_trains_nothing_and_records_only_what_it_found(monkeypatch, tmp_path):
    """`Session.cached_meta`: a cached checkpoint's metadata, recorded in the header as `model` records it; a
    missing one gives None and trains nothing."""
    import torch

    from hedgekit.zoo import Spec

    found, missing = Spec(kind="point", preset="fast", seed=1), Spec(kind="point", preset="fast", seed=2)
    loaded = []

    def fake_load_model(spec, progress=False, **kwargs):
        loaded.append(spec.name)
        return torch.nn.Linear(1, 1), {"source": "cache", "path": "", "train_config": {"steps": 3},
                                       "train_seconds": 1.0, "metrics": {"seed": spec.seed}}

    monkeypatch.setattr("hedgekit.repro.session.load_model", fake_load_model)
    monkeypatch.setattr("hedgekit.repro.session.find_checkpoint",
                        lambda spec: tmp_path / "x.pt" if spec == found else None)
    s = Session("04_known_unknowns")
    s.configure(fast=False, report_dir=str(tmp_path))
    assert s.cached_meta(missing) is None and loaded == [] and s.checkpoints == []
    assert s.cached_meta(found)["metrics"] == {"seed": 1}
    assert loaded == [found.name] and [c.name for c in s.checkpoints] == [found.name]
    assert s.cached_meta(found)["metrics"] == {"seed": 1} and loaded == [found.name]  # loaded once per session



def test_cached_meta_stands_the_ledgers_record_in_for_a_checkpoint_not_on_this_machine(tmp_ledger, monkeypatch,
                                                                                      tmp_path):
    """No checkpoint (an empty HEDGEKIT_DATA) but a ledger record: its measures as a checkpoint's metadata, listed in
    the header with source "ledger"; nothing is loaded or trained."""
    from hedgekit.zoo import Spec

    monkeypatch.setenv("HEDGEKIT_DATA", str(tmp_path / "data"))
    monkeypatch.setattr("hedgekit.repro.session.load_model", lambda *a, **k: pytest.fail("nothing is loaded or trained"))
    spec, absent = Spec(kind="point", preset="paper", seed=7), Spec(kind="point", preset="paper", seed=8)
    rec = tmp_ledger(spec, {"knn_corrupt": 0.71, "tau_ap_clean": None, "eval_images": 10_000}, device="cpu")
    s = Session("04_known_unknowns")
    s.configure(fast=False, report_dir=str(tmp_path))
    meta = s.cached_meta(spec)
    assert meta["source"] == "ledger" and meta["metrics"]["knn_corrupt"] == 0.71 and meta["eval_images"] == 10_000
    assert s.cached_meta(absent) is None and s.cached_meta(spec) is meta  # listed once
    [c] = s.checkpoints
    assert (c.name, c.source, c.sha256, c.steps, c.device) == (spec.name, "ledger", rec["checkpoint_sha256"][:12],
                                                               12000, "cpu")
    assert f"- `{spec.name}` — ledger, 12000 steps" in s.markdown()


def test_a_loaded_checkpoint_that_disagrees_with_the_ledger_is_refused(tmp_ledger, monkeypatch, tmp_path):
    import torch

    from hedgekit.zoo import Spec, ledger

    spec = Spec(kind="point", preset="fast", seed=1)
    tmp_ledger(spec, {"knn_corrupt": 0.71, "eval_images": 2000})
    knn = {"value": 0.71}

    def fake_load_model(spec, progress=False, **kwargs):
        return torch.nn.Linear(1, 1), {"source": "cache", "path": "", "train_config": {"steps": 3},
                                       "metrics": {"knn_corrupt": knn["value"]}, "eval_images": 2000}

    monkeypatch.setattr("hedgekit.repro.session.load_model", fake_load_model)
    s = Session("04_known_unknowns")
    s.configure(fast=True, report_dir=str(tmp_path))
    s.model(spec)  # agrees with the ledger
    knn["value"] = 0.72
    with pytest.raises(ledger.LedgerConflict, match=r"knn_corrupt 0.71 \(ledger\) against 0.72 \(new\)"):
        Session("04_known_unknowns").model(spec)


def test_measures_measure_a_model_here_else_read_the_ledger_else_train_and_never_contradict_the_ledger(
        tmp_ledger, monkeypatch, tmp_path):
    """`Session.measures` with a stand-in group ("toy": the model's bias read back): a checkpoint here is measured
    (and must agree with the ledger's record of the group); a seed only the ledger holds gives its record, listed in
    the header from the ledger, nothing loaded; a seed neither holds trains now, or gives None without ``train``."""
    import torch

    from hedgekit.errors import InputError
    from hedgekit.repro import measured
    from hedgekit.zoo import Spec, ledger

    monkeypatch.setattr(measured, "model_measures",
                        lambda spec: {"toy": lambda m, meta: {"bias": float(m.bias.detach())}})
    here, recorded, neither = (Spec(kind="point", dim=1, preset="paper", seed=s) for s in (1, 2, 3))
    tmp_ledger(recorded, {"knn_corrupt": 0.7, "eval_images": 10_000})
    tmp_ledger(recorded, {"bias": 2.0}, group="toy")
    bias = {"value": 1.0}
    loads = []

    def fake_load_model(spec, progress=False, **kwargs):
        loads.append(spec.name)
        path = tmp_path / f"{spec.name}.pt"
        path.write_bytes(spec.name.encode())
        model = torch.nn.Linear(1, 1)
        torch.nn.init.constant_(model.bias, bias["value"] + spec.seed)
        return model, {"source": "cache" if spec == here else "trained now", "path": str(path), "device": "cpu",
                       "train_config": {"steps": 3}, "train_seconds": 1.0}

    monkeypatch.setattr("hedgekit.repro.session.load_model", fake_load_model)
    monkeypatch.setattr("hedgekit.repro.session.find_checkpoint",
                        lambda spec: tmp_path / f"{spec.name}.pt" if spec == here else None)
    s = Session("03_self_organization")
    s.configure(fast=False, report_dir=str(tmp_path))
    assert s.measures(here, "toy") == {"bias": 2.0, "source": "cache", "device": "cpu"}
    got = s.measures(recorded, "toy")
    assert got["bias"] == 2.0 and got["source"] == "ledger" and got["device"] == "cpu" and loads == [here.name]
    assert s.measures(recorded, "toy", train=False)["bias"] == 2.0  # held: read, whatever ``train`` says
    assert s.measures(neither, "toy", train=False) is None and loads == [here.name]  # not held: nothing trains
    assert s.measures(neither, "toy") == {"bias": 4.0, "source": "trained now", "device": "cpu"}
    assert [c.name for c in s.checkpoints] == [here.name, recorded.name, neither.name]
    assert [c.source for c in s.checkpoints] == ["cache", "ledger", "trained now"]
    assert ledger.seed_sources([s.measures(here, "toy"), got]).startswith("2 seeds: 1 from a checkpoint on this "
                                                                          "machine, 1 from the ledger (trained on cpu")
    with pytest.raises(InputError, match="has no measure group 'adjacency'"):
        s.measures(here, "adjacency")
    # the ledger holds the checkpoint's group and a new measurement disagrees: refused
    tmp_ledger(here, {"bias": 2.0}, group="toy")
    bias["value"] = 1.5
    with pytest.raises(ledger.LedgerConflict, match=r"bias 2.0 \(ledger\) against 2.5 \(new\)"):
        Session("03_self_organization").measures(here, "toy")


VERSIONED = ("matplotlib", "pandas", "seaborn", "plotly", "sklearn", "scipy", "papermill")  # in the header
LATER = VERSIONED + ("nbformat", "IPython")
FIRST_CELL = """
import sys
from hedgekit.repro.session import Session, versions_table
S = Session("02_hib_embeddings")
print("LOADED", [m for m in {later!r} if m in sys.modules])
versions = versions_table()
print("WRONG", [m for m in {versioned!r} if versions.get(m) != __import__(m).__version__])
"""


def test_the_first_cell_leaves_what_later_cells_need_unimported(tmp_path):
    """A notebook's first cell (import the session, build it) in a fresh interpreter loads none of
    the heavy packages later cells use; the header still gives each one's version (read from its metadata), the
    version the package itself reports. Counts modules, not seconds: machine load cannot fool it (docs/speed.md
    has the time)."""
    import subprocess
    import sys

    cell = FIRST_CELL.format(later=LATER, versioned=VERSIONED)
    out = subprocess.run([sys.executable, "-c", cell], capture_output=True, text=True, timeout=120, check=True,
                         env={**os.environ, "HEDGEKIT_DATA": str(tmp_path)}).stdout
    assert "02_hib_embeddings" in out and "versions: hedgekit" in out  # the header printed (no IPython here)
    assert "LOADED []" in out and "WRONG []" in out, out


def test_fast_times_read_the_recorded_fast_run_and_print_with_its_load(tmp_path):
    """The quick tour's times come from a FAST run's record, never typed: only a FAST record's
    finished runs count, and each is shown with the load the run met."""
    import json

    from hedgekit.repro.session import fast_time_text, fast_times

    record = tmp_path / "fast.json"
    runs = [{"notebook": "02_hib_embeddings.ipynb", "status": "ok", "seconds": 71.6, "load": [1.92, 2.44],
             "date": "2026-11-27 13:00"},
            {"notebook": "07_spe_ndigit.ipynb", "status": "ok", "seconds": 151.0},
            {"notebook": "08_het_triplet_retrieval.ipynb", "status": "failed", "seconds": 3.0}]
    record.write_text(json.dumps({"fast": True, "runs": runs}))
    times = fast_times(record)
    assert sorted(times) == ["02_hib_embeddings", "07_spe_ndigit"]
    assert fast_time_text(**{k: times["02_hib_embeddings"][k] for k in ("seconds", "load")}) == "72 s (load 1.9-2.4)"
    assert fast_time_text(times["07_spe_ndigit"]["seconds"]) == "2.5 min"
    assert fast_time_text(30.0, [2.01, 2.04]) == "30 s (load 2.0)"
    record.write_text(json.dumps({"fast": False, "runs": runs}))  # a full-mode record says nothing of FAST
    assert fast_times(record) == {} and fast_times(tmp_path / "missing.json") == {}
    record.write_text("{not json")
    assert fast_times(record) == {}


@pytest.mark.slow
def test_a_notebook_run_records_the_load_beside_its_time(tmp_path):
    import nbformat

    from hedgekit.repro.reproduce import run_notebook

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1 + 1")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, tmp_path / "tiny.ipynb")
    rec = run_notebook(tmp_path / "tiny.ipynb", tmp_path / "out.ipynb", {})
    assert rec["status"] == "ok" and rec["seconds"] > 0
    assert len(rec["load"]) == 2 and all(isinstance(x, float) and x >= 0 for x in rec["load"])


@pytest.mark.parametrize("name, value, expected", [
    ("threads", 0, "an integer >= 1 and <= 1024 (torch threads, as the command line's --threads)"),
    ("threads", 2.7, "an integer >= 1 and <= 1024 (torch threads, as the command line's --threads)"),
    ("threads", None, "an integer >= 1 and <= 1024 (torch threads, as the command line's --threads)"),
    ("threads", True, "an integer >= 1 and <= 1024 (torch threads, as the command line's --threads)"),
    ("threads", 1025, "an integer >= 1 and <= 1024 (torch threads, as the command line's --threads)"),
    ("seed", -1, "an integer >= 0 and <= 9223372036854775807 = 2^63 - 1 (as the command line's --seed)"),
    ("seed", "0", "an integer >= 0 and <= 9223372036854775807 = 2^63 - 1 (as the command line's --seed)"),
    ("steps", -1, "0 (the preset's steps) or an integer >= 1 and <= 10000000 (as the command line's --steps)"),
    ("steps", 10_000_001, "0 (the preset's steps) or an integer >= 1 and <= 10000000 (as the command line's --steps)"),
    ("seeds", 0, "an integer >= 1 and <= 1000 (as python -m hedgekit url-benchmark --seeds)"),
    ("repeats", 2.5, "an integer >= 1 (evaluations per model)"),
    ("runs", 0, "None (the mode's default) or an integer >= 1 (training runs per row)"),
    ("fast", "False", "True (the quick tour) or False (full mode)"),
    ("report_dir", None, 'a folder path (a str; "" for no report files)'),
    ("device", None, '"auto" or a device this machine has: "cpu", "cuda", "cuda:N" or "mps" (as the command '
                     "line's --device)"),
])
def test_a_parameter_out_of_the_command_lines_bounds_is_refused_by_name(capsys, name, value, expected):
    """Each parameter the notebooks' parameters cells pass is checked with the command line's bounds before anything
    is set: one paragraph names it as the cell spells it, its value and what is expected."""
    import torch

    from hedgekit.errors import InputError

    s = Session("08_het_triplet_retrieval")
    threads = torch.get_num_threads()
    with pytest.raises(InputError) as err:
        s.configure(**{"fast": True, name: value})
    assert str(err.value) == (f"{name.upper()} = {value!r} in the notebook's parameters cell (Session.configure's "
                              f"{name}): expected {expected}")
    assert s.fast is None and s.params == {} and torch.get_num_threads() == threads  # nothing was set


def test_an_unknown_device_is_refused_with_what_the_command_line_accepts(capsys):
    from hedgekit.errors import InputError

    with pytest.raises(InputError, match=r"^DEVICE = 'gpu' in the notebook's parameters cell \(Session.configure's "
                                         r"device\): expected \"auto\" or a device this machine has: .*; 'gpu' is not "
                                         r"a device; use cpu, cuda, cuda:N, mps or auto$"):
        Session("08_het_triplet_retrieval").configure(fast=True, device="gpu")


def test_parameters_within_the_bounds_are_taken_as_given(capsys):
    """The notebooks' defaults and the bounds' ends pass: numpy integers, STEPS = 0 (the preset's), RUNS = None (the
    mode's default), and keywords no check knows."""
    import numpy as np
    import torch

    s = Session("08_het_triplet_retrieval")
    threads = torch.get_num_threads()
    try:
        s.configure(fast=np.bool_(False), seed=2**63 - 1, report_dir="", threads=np.int64(2), device="cpu", steps=0,
                    runs=None, seeds=1000, repeats=1, train_seeds=True)
        assert torch.get_num_threads() == 2 and s.device == "cpu" and s.fast is False
    finally:
        torch.set_num_threads(threads)
    assert s.params == {"seed": 2**63 - 1, "steps": 0, "runs": None, "seeds": 1000, "repeats": 1, "train_seeds": True}


# ---------------------------------------------------------------- a header quotes no time but its own run's
HEADER = ("**02_hib_embeddings** — started 2026-11-27 14:22:04\n\nversions: hedgekit 0.1.0\n\n"
          "Run All plays the quick tour (`FAST = True`, the default; under 3 minutes). Full mode, the paper's set-up: "
          "set `FAST = False` in the parameters cell: about 750 s with every checkpoint cached: the run on 2026-11-27 "
          "12:29 took 1296 s.\n\nmode: **FULL (`paper` preset models)**; parameters: seed=0\n\nrun time: 155 s")
DURATION = re.compile(r"\b(\d+(?:\.\d+)?) (?:s|min)\b")


def test_a_full_mode_header_is_restated_with_its_own_run_time():
    out = restate_header(HEADER, "02_hib_embeddings")
    sentence = next(line for line in out.splitlines() if line.startswith("Run All plays"))
    assert DURATION.findall(sentence) == ["155"] and "this full-mode run took 155 s" in sentence
    assert out.splitlines()[-1] == "run time: 155 s" and "under 3 minutes" not in out
    fast_header = HEADER.replace("mode: **FULL (`paper` preset models)**", "mode: **FAST (CI)**")
    kept = next(line for line in restate_header(fast_header, "02_hib_embeddings").splitlines()
                if line.startswith("Run All plays"))
    assert "about 750 s with every checkpoint cached" in kept  # a FAST run quotes the recorded full-mode run
    assert restate_header(out, "02_hib_embeddings") == out  # restating twice changes nothing


def test_a_finished_full_mode_session_states_its_own_time():
    s = Session("02_hib_embeddings")
    s.fast = False
    s.finish()
    sentence = next(line for line in s.markdown().splitlines() if line.startswith("Run All plays"))
    assert DURATION.findall(sentence) == [f"{s.runtime:.0f}"]


@pytest.mark.parametrize("name", sorted(p.name for p in (REPO_DIR / "notebooks").glob("0*.ipynb")))
def test_a_committed_full_mode_header_quotes_its_own_run_time_and_no_other(name):
    nb = json.loads((REPO_DIR / "notebooks" / name).read_text())
    first = nb["cells"][0].get("outputs", [])
    text = "".join(next((o["data"]["text/markdown"] for o in first if "text/markdown" in o.get("data", {})), ""))
    if "mode: **FULL" not in text:
        pytest.skip(f"{name} has no full-mode session header")
    runtime = re.search(r"^run time: (\d+) s$", text, re.M)
    sentence = next(line for line in text.splitlines() if line.startswith("Run All plays"))
    assert runtime and DURATION.findall(sentence) == [runtime.group(1)], sentence
