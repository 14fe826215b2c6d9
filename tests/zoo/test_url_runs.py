"""Tests of hedgekit.zoo.url_runs: URL benchmark runs as models of the store, found, judged and loaded where
the benchmark has always kept them."""
import pytest
import torch

import hedgekit.zoo as zoo
from hedgekit.errors import CheckpointError, InputError
from hedgekit.zoo import load_or_train

pytestmark = pytest.mark.filterwarnings("ignore:Converting a tensor with requires_grad=True to a scalar")


def _old_layout_run(folder, method, seed, budget, **fields):
    """A URL run written as the benchmark wrote them before it joined the zoo (its own `_save_run`, repeated here
    byte for byte as the oracle): ``.pt`` = {"state_dict", "meta"}, then the JSON record naming the SHA-256 of the
    ``.pt`` file. Returns (record path, state_dict)."""
    import hashlib
    import json

    from hedgekit.papers.url import benchmark

    b = benchmark.BUDGETS[budget]
    model = benchmark.build_model(method, seed, n_classes=70, **b.hparams(method))
    record = folder / budget / f"{method}-s{seed}.json"
    record.parent.mkdir(parents=True)
    rec = {"method": method, "seed": seed, "budget": budget, "config": benchmark.run_config(b, method),
           "down_rauroc": 0.61, "up_r1": 0.83, "device": "cpu", "history": [{"step": 0, "loss": 4.2}], **fields}
    torch.save({"state_dict": model.state_dict(), "meta": {k: rec[k] for k in ("method", "seed", "budget", "config")}},
               record.with_suffix(".pt"))
    rec["weights_sha256"] = hashlib.sha256(record.with_suffix(".pt").read_bytes()).hexdigest()
    record.write_text(json.dumps(rec, indent=1))
    return record, model.state_dict()


def test_an_old_layout_url_run_is_found_where_it_is_and_not_retrained(url_store, tmp_path):
    benchmark = url_store
    record, state = _old_layout_run(tmp_path / "url", "ce", 1, "converged")
    before = {p.name: p.read_bytes() for p in record.parent.iterdir()}
    spec = zoo.URLSpec("ce", "converged", 1)
    assert zoo.cache_checkpoint_path(spec, None) == record == benchmark.run_path("ce", 1, "converged")
    assert zoo.find_checkpoint(spec) == record and not zoo.is_stale(record, spec)
    model, meta = load_or_train(spec)  # the trainer raises if called
    assert meta["source"] == "cache" and meta["path"] == str(record) and meta["down_rauroc"] == 0.61
    assert all(torch.equal(v, state[k]) for k, v in model.state_dict().items())
    rec = benchmark.run_one("ce", 1, "converged")
    assert rec["source"] == "cache" and rec["up_r1"] == 0.83 and "path" not in rec
    runs = benchmark.cached_runs("converged")
    assert list(zip(runs["method"], runs["seed"], runs["down_rauroc"])) == [("ce", 1, 0.61)]
    loaded = benchmark.load_run_model("ce", 1, "converged")
    assert all(torch.equal(v, state[k]) for k, v in loaded.state_dict().items())
    assert {p.name: p.read_bytes() for p in record.parent.iterdir()} == before  # read where it is, not rewritten


def test_url_staleness_is_the_budget_and_the_code_key_not_the_device(url_store, tmp_path, monkeypatch):
    import json
    from dataclasses import replace

    benchmark = url_store
    record, _ = _old_layout_run(tmp_path / "url", "losspred", 0, "converged", device="cuda:0 (a card)")
    spec = zoo.URLSpec("losspred", "converged", 0)
    assert zoo.find_checkpoint(spec) == record  # trained on another device: the same run
    with monkeypatch.context() as m:  # the budget's evaluation sets change
        m.setitem(benchmark.BUDGETS, "converged", replace(benchmark.BUDGETS["converged"], eval_per_class=10))
        assert zoo.is_stale(record, spec) and zoo.find_checkpoint(spec) is None
    with monkeypatch.context() as m:  # the method's own hyper-parameter (Losspred's lambda) changes
        settings = dict(benchmark.BUDGETS["converged"].settings, losspred=benchmark.Setting(hparams={"lam": 0.2}))
        m.setitem(benchmark.BUDGETS, "converged", replace(benchmark.BUDGETS["converged"], settings=settings))
        assert zoo.is_stale(record, spec) and zoo.find_checkpoint(spec) is None
    from hedgekit.papers.url import code_hash

    real = code_hash.source_text
    with monkeypatch.context() as m:  # code the run executes is edited: the upstream trainer
        m.setattr(code_hash, "source_text", lambda path: real(path) + ("\n# edited" if path.endswith(
            "upstream.py") and "training" in path else ""))
        assert zoo.is_stale(record, spec) and zoo.find_checkpoint(spec) is None
        with pytest.raises(InputError, match="url-benchmark --methods losspred --seeds 1 --budget converged"):
            benchmark.load_run_model("losspred", 0, "converged")
    assert not zoo.is_stale(record, spec) and zoo.find_checkpoint(spec) == record  # as it was
    rec = json.loads(record.read_text())
    rec["config"]["train"]["steps"] += 1  # the recorded training config differs from the budget's
    record.write_text(json.dumps(rec))
    assert zoo.is_stale(record, spec) and zoo.find_checkpoint(spec) is None


def test_a_url_run_that_load_or_train_trains_is_saved_as_a_run_pair_and_found(url_store, tmp_path, monkeypatch):
    import hashlib
    import json

    benchmark = url_store
    spec = zoo.URLSpec("ce", "paper", 3)
    calls = []

    def fake_train(s, progress=False, device="cpu"):
        calls.append(s)
        rec = {"method": s.method, "seed": s.seed, "budget": s.budget, "config": s.run_config(), "down_rauroc": 0.5,
               "device": "cpu"}
        return benchmark.build_model(s.method, s.seed), rec

    from hedgekit.papers.url import recipe

    monkeypatch.setattr(recipe, "train_run", fake_train)
    model, meta = load_or_train(spec, save=False)
    assert meta["source"] == "trained now" and meta["path"] == "" and zoo.find_checkpoint(spec) is None
    model, meta = load_or_train(spec)
    record = zoo.cache_checkpoint_path(spec, None)
    assert meta["path"] == str(record) and calls == [spec, spec]
    saved = json.loads(record.read_text())
    assert saved["weights_sha256"] == hashlib.sha256(record.with_suffix(".pt").read_bytes()).hexdigest()
    assert {k: saved[k] for k in ("method", "seed", "budget", "down_rauroc")} == {
        "method": "ce", "seed": 3, "budget": "paper", "down_rauroc": 0.5}
    again, meta = load_or_train(spec)
    assert meta["source"] == "cache" and len(calls) == 2
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in again.state_dict().items())
    record.with_suffix(".pt").write_bytes(record.with_suffix(".pt").read_bytes() + b"\0")  # weights replaced
    assert zoo.find_checkpoint(spec) is None
    with pytest.raises(CheckpointError, match="not the weights its metrics were measured on"):
        zoo.load_url_run(record, spec)
    assert load_or_train(spec)[1]["source"] == "trained now" and len(calls) == 3


def test_a_url_spec_works_once_the_url_paper_is_imported_and_not_before(tmp_path):
    """The store knows what a URL run is only from the URL paper, which registers its recipe when imported
    (`hedgekit.zoo.url_runs.register_url_runs`). In a fresh interpreter: before, a spec is refused with an
    InputError naming the module to import; after importing the recipe alone (not the benchmark), a spec is checked,
    named, placed and configured, and an unknown method is refused naming the known ones."""
    import os
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from hedgekit.zoo import URLSpec, find_checkpoint, url_run_path\n"
        "from hedgekit.errors import InputError\n"
        "assert not [m for m in sys.modules if m.startswith('hedgekit.papers')]\n"
        "try:\n"
        "    URLSpec('nivmf', 'converged', 2)\n"
        "except InputError as exc:\n"
        "    print('before:', exc)\n"
        "import hedgekit.papers.url.recipe\n"
        "assert 'hedgekit.papers.url.benchmark' not in sys.modules\n"
        "spec = URLSpec('nivmf', 'converged', 2)\n"
        "cfg = spec.run_config()\n"
        "print(spec.name, url_run_path(spec).relative_to(sys.argv[1]).as_posix(), find_checkpoint(spec),\n"
        "      cfg['train']['steps'], cfg['embed_dim'], len(cfg['code']))\n"
        "try:\n"
        "    URLSpec('nope')\n"
        "except InputError as exc:\n"
        "    print('refused:', exc)\n")
    env = dict(os.environ, HEDGEKIT_DATA=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    before, first, refused = out.stdout.splitlines()
    assert before.startswith("before: the store knows URL runs only once the URL paper has defined them: import "
                             "hedgekit.papers.url.recipe")
    assert first == "url-nivmf-converged-s2 url/converged/nivmf-s2.json None 400 16 12"
    assert refused.startswith("refused: unknown method(s) ['nope']") and "nivmf" in refused


def test_the_store_imports_no_paper_and_the_recipe_registers_itself(url_defined):
    """The arrow runs one way: nothing in the store's import closure (imports inside functions too) is a paper; the
    URL recipe builds on the store and registers itself there when imported; the benchmark builds on both and
    re-exports the recipe; the recipe does not import the benchmark."""
    from hedgekit.papers.url import benchmark, recipe
    from hedgekit.papers.url.code_hash import module_closure
    from hedgekit.zoo import url_runs

    store = module_closure(["hedgekit.zoo"])
    assert "hedgekit.zoo.url_runs" in store and [m for m in store if m.startswith("hedgekit.papers")] == []
    below = module_closure(["hedgekit.papers.url.recipe"])
    assert {"hedgekit.papers.url.protocol", "hedgekit.training.upstream", "hedgekit.zoo.url_runs"} <= set(below)
    assert "hedgekit.papers.url.benchmark" not in below
    assert url_runs._recipe() is recipe
    assert benchmark.run_config is recipe.run_config and benchmark.BUDGETS is recipe.BUDGETS


def test_a_definition_of_url_runs_must_have_every_function():
    """`register_url_runs` refuses a definition without the functions the store calls, naming the missing ones,
    and leaves the registered one in place."""
    from types import SimpleNamespace

    from hedgekit.zoo import url_runs

    before = url_runs._definition
    partial = SimpleNamespace(**{name: (lambda *a, **k: None) for name in url_runs.URL_RUN_FUNCTIONS[:-1]},
                              train_run="not callable")
    with pytest.raises(InputError, match="lacks train_run"):
        zoo.register_url_runs(partial)
    assert url_runs._definition is before
