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


def test_a_url_spec_works_in_a_fresh_interpreter_with_nothing_else_imported(tmp_path):
    """Issue 47: a `URLSpec` used to work only after `hedgekit.papers.url.benchmark` had been imported, because
    that module filled a registry of the zoo when imported. Now the zoo imports what a run is where a run is first
    checked (`url_runs._recipe`): in a fresh interpreter, a spec is checked, named, placed and configured, and
    an unknown method is refused naming the known ones, with nothing imported before ``from hedgekit.zoo``."""
    import os
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from hedgekit.zoo import URLSpec, find_checkpoint, url_run_path\n"
        "from hedgekit.errors import InputError\n"
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
    first, refused = out.stdout.splitlines()
    assert first == "url-nivmf-converged-s2 url/converged/nivmf-s2.json None 400 16 12"
    assert refused.startswith("refused: unknown method(s) ['nope']") and "nivmf" in refused


def test_what_a_run_is_sits_below_both_the_store_and_the_benchmark():
    """Issue 47: the store's URL runs and the benchmark imported each other (url_runs -> benchmark.run_config,
    benchmark -> zoo). What both need, `hedgekit.papers.url.recipe`, imports neither, anywhere in its import closure
    (imports inside functions too); the store reaches it, not the benchmark, and the benchmark re-exports it."""
    from hedgekit.papers.url import benchmark, recipe
    from hedgekit.papers.url.code_hash import module_closure

    below = module_closure(["hedgekit.papers.url.recipe"])
    assert {"hedgekit.papers.url.protocol", "hedgekit.training.upstream"} <= set(below)
    assert [m for m in below if m.startswith("hedgekit.zoo") or m == "hedgekit.papers.url.benchmark"] == []
    store = module_closure(["hedgekit.zoo.url_runs"])
    assert "hedgekit.papers.url.recipe" in store and "hedgekit.papers.url.benchmark" not in store
    assert benchmark.run_config is recipe.run_config and benchmark.BUDGETS is recipe.BUDGETS
