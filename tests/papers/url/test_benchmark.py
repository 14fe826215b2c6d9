"""Oracles for the URL benchmark runner: leaderboard aggregation against numpy, caching and resume (a second
run trains nothing; a changed budget retrains), the code hash of a run (the method's module and every hedgekit
module it or the trainer imports: an edit to shared code makes a run stale), the CLI's argument errors, and a tiny
end-to-end run.

The runner tests use a stand-in method (a linear classifier with entropy u(x), defined here) and tiny synthetic
data, so they take well under a second each; the real-data run is marked slow.
"""
import json
import math

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from hedgekit import cli
from hedgekit.papers.url import benchmark, code_hash, leaderboard, recipe
from hedgekit.training.upstream import UpstreamConfig
from hedgekit.data.mnist import mnist_source
from hedgekit.zoo import ledger, url_runs


class StandIn(nn.Module):
    """The smallest URL head: linear embedding, linear classifier, u(x) = entropy of the softmax."""

    name = "standin"

    def __init__(self, feat_dim, n_classes, embed_dim=16):
        super().__init__()
        self.project, self.classifier = nn.Linear(feat_dim, embed_dim), nn.Linear(embed_dim, n_classes)

    def forward(self, features):
        e = self.project(features)
        logits = self.classifier(e)
        p = logits.softmax(-1)
        return {"embedding": e, "uncertainty": -(p * p.clamp_min(1e-12).log()).sum(-1), "logits": logits}

    def loss(self, out, labels):
        return F.cross_entropy(out["logits"], labels)


TINY = benchmark.Budget("fast", UpstreamConfig(steps=3, classes_per_batch=4, per_class=2, log_every=1), eval_per_class=4)


@pytest.fixture
def tiny(monkeypatch, tmp_path):
    """Stand-in method, tiny synthetic data, the cache and the ledger in tmp_path, and a counter of training calls."""
    monkeypatch.setenv("HEDGEKIT_LEDGER", str(tmp_path / "ledger"))  # each test's runs draw fresh data: its own ledger
    g = torch.Generator().manual_seed(0)
    classes = np.arange(0, 100, 10)  # 10 "seen" classes
    labels = np.repeat(classes, 6)
    x = (torch.rand(len(labels), 1, 28, 56, generator=g) * 255).to(torch.uint8)
    monkeypatch.setattr(recipe, "_train_data",
                        lambda: (x, torch.from_numpy(np.searchsorted(classes, labels)), classes))

    def sets(per_class):
        def one(classes_):
            y = torch.as_tensor(classes_).repeat_interleave(per_class)
            return torch.rand(len(y), 1, 28, 56, generator=g), y
        return {"up": one(classes), "unseen": one(np.arange(1, 6)), "fashion": one(np.arange(200, 206))}

    monkeypatch.setattr(recipe, "eval_sets", sets)
    monkeypatch.setattr(recipe, "method_registry", lambda: {"standin": StandIn, "other": StandIn})
    monkeypatch.setattr(recipe, "cache_root", lambda: tmp_path / "url")
    monkeypatch.setitem(benchmark.BUDGETS, "fast", TINY)
    calls = []
    real_fit = recipe.fit_upstream
    monkeypatch.setattr(recipe, "fit_upstream", lambda *a, **k: calls.append(1) or real_fit(*a, **k))
    return calls


def test_second_run_trains_nothing_and_a_new_budget_retrains(tiny, tmp_path):
    runs = benchmark.run_benchmark("standin,other", 2, "fast", progress=False)
    assert len(tiny) == 4 and (runs["source"] == "trained now").all()
    assert set(runs.columns) >= set(benchmark.METRICS) - {"up_acc"}
    again = benchmark.run_benchmark(["standin", "other"], 2, "fast", progress=False)
    assert len(tiny) == 4 and (again["source"] == "cache").all()  # resumed: nothing trained
    pd.testing.assert_frame_equal(runs.drop(columns="source"), again.drop(columns="source"))
    benchmark.run_benchmark(["standin"], 3, "fast", progress=False)
    assert len(tiny) == 5  # only the new seed
    # a cached run whose budget config differs is stale: retrained
    path = benchmark.run_path("standin", 0, "fast")
    rec = json.loads(path.read_text())
    rec["config"]["train"]["steps"] = 999
    path.write_text(json.dumps(rec))
    assert benchmark.run_one("standin", 0, "fast")["source"] == "trained now" and len(tiny) == 6
    model = benchmark.load_run_model("standin", 1, "fast")  # the saved weights load back
    assert isinstance(model.head, StandIn)


def test_run_records_are_complete(tiny):
    rec = benchmark.run_one("standin", 0, "fast")
    for key in ("up_acc", "up_rauroc", "up_crop", "up_crop_corr", "r1", "rauroc", "crop", "crop_corr", "fashion_r1",
                "fashion_rauroc", "fashion_crop_corr", "down_r1", "down_rauroc", "train_seconds", "cpu_seconds"):
        assert key in rec and isinstance(rec[key], float)
    assert 0 <= rec["up_acc"] <= 1 and 0 <= rec["crop"] <= 1
    assert all(-1 <= rec[k] <= 1 for k in ("up_crop_corr", "crop_corr", "fashion_crop_corr"))
    assert rec["down_r1"] == pytest.approx((rec["r1"] + rec["fashion_r1"]) / 2)
    assert [h["step"] for h in rec["history"]] == [0, 1, 2]
    assert rec["device"] == "cpu"  # where it trained, as a checkpoint records it


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_run_trains_on_cuda_and_records_it(tiny):
    rec = benchmark.run_one("standin", 0, "fast", device="cuda")
    assert rec["device"].startswith("cuda:") and rec["source"] == "trained now"
    assert benchmark.load_run_model("standin", 0, "fast") is not None  # saved from the CPU, loads anywhere


def test_cli_runs_resumes_and_writes_the_leaderboard(tiny, tmp_path, capsys):
    assert cli.main(["url-benchmark", "--methods", "standin", "--seeds", "3", "--fast", "--quiet",
                     "--out", str(tmp_path / "lb")]) == 0
    out = capsys.readouterr().out
    assert "3 runs, 3 trained now" in out and "| standin |" in out
    assert (tmp_path / "lb" / "leaderboard-fast.csv").is_file() and (tmp_path / "lb" / "leaderboard-fast.md").is_file()
    assert cli.main(["url-benchmark", "--methods", "standin", "--seeds", "3", "--fast", "--quiet",
                     "--out", str(tmp_path / "lb")]) == 0
    assert "3 runs, 0 trained now, 3 from the cache" in capsys.readouterr().out


def test_cli_argument_errors(tiny, capsys):
    assert cli.main(["url-benchmark", "--methods", "standin,nope", "--fast"]) == 2
    assert "unknown method(s) ['nope']; choose from standin, other" in capsys.readouterr().err
    for bad in ("0", "three"):
        with pytest.raises(SystemExit) as exc:
            cli.main(["url-benchmark", "--seeds", bad])
        assert exc.value.code == 2
        assert "--seeds" in capsys.readouterr().err
    for bad in ("gpu", "cuda:99"):  # an unknown device; a CUDA index this machine does not have
        with pytest.raises(SystemExit) as exc:
            cli.main(["url-benchmark", "--device", bad, "--fast"])
        assert exc.value.code == 2 and "--device" in capsys.readouterr().err
    with pytest.raises(benchmark.InputError, match="budget must be one of"):
        benchmark.run_one("standin", 0, "huge")
    assert len(tiny) == 0


@pytest.mark.slow
def test_tiny_end_to_end_on_real_data(monkeypatch, tmp_path):
    """CE on real 2-digit MNIST for 30 steps: every metric is defined and R@1 on unseen digits beats chance."""
    pytest.importorskip("hedgekit.methods.ce")
    monkeypatch.setattr(recipe, "cache_root", lambda: tmp_path / "url")
    budget = benchmark.Budget("fast", UpstreamConfig(steps=30, log_every=10), eval_per_class=5)
    rec = benchmark.run_one("ce", 0, budget)
    assert rec["r1"] > 1 / 30 and rec["up_acc"] > 1 / 70
    assert all(math.isfinite(rec[k]) for k in ("rauroc", "down_rauroc", "up_rauroc", "crop", "crop_corr",
                                               "up_crop_corr", "fashion_r1"))


def test_cached_runs_reads_back_only_complete_runs(tiny):
    assert benchmark.cached_runs("fast").empty  # nothing cached yet, nothing trained
    benchmark.run_benchmark(["standin", "other"], 2, "fast", progress=False)
    benchmark.run_path("other", 1, "fast").with_suffix(".pt").unlink()  # weights missing: not complete
    runs = benchmark.cached_runs("fast")
    assert len(tiny) == 4
    assert sorted(zip(runs["method"], runs["seed"])) == [("other", 0), ("standin", 0), ("standin", 1)]
    assert (runs["source"] == "cache").all() and "config" not in runs.columns
    assert benchmark.cached_runs("paper").empty


def test_uncertainty_extremes_match_a_full_sort(tiny, monkeypatch):
    from hedgekit.training.upstream import predict

    benchmark.run_one("standin", 1, "fast")
    fixed = recipe.eval_sets(TINY.eval_per_class)  # the fixture draws fresh images per call: fix one draw
    monkeypatch.setattr(recipe, "eval_sets", lambda per_class: fixed)
    x, y = fixed["unseen"]
    ext = benchmark.uncertainty_extremes("standin", seed=1, budget="fast", k=3)
    u = predict(benchmark.load_run_model("standin", 1, "fast"), x)["uncertainty"]
    ranked = sorted(range(len(u)), key=lambda i: u[i])  # naive full sort, least uncertain first
    assert ext["n"] == len(u) == 20
    np.testing.assert_allclose(ext["least"]["u"], u[ranked[:3]])
    np.testing.assert_allclose(ext["most"]["u"], u[ranked[::-1][:3]])
    np.testing.assert_array_equal(ext["most"]["images"], x[ranked[::-1][:3], 0].numpy())
    np.testing.assert_array_equal(ext["least"]["labels"], y.numpy()[ranked[:3]])
    with pytest.raises(benchmark.InputError, match="url-benchmark --methods other --seeds 1 --budget fast"):
        benchmark.uncertainty_extremes("other", 0, "fast")
    with pytest.raises(benchmark.InputError, match="k must be"):
        benchmark.uncertainty_extremes("standin", 1, "fast", k=0)
    benchmark.run_path("standin", 1, "fast").with_suffix(".pt").write_bytes(b"not a checkpoint")
    with pytest.raises(benchmark.CheckpointError, match="--methods standin --seeds 2 --retrain --budget fast"):
        benchmark.uncertainty_extremes("standin", 1, "fast")



RECORDED = {"up": ("up_r1", "up_rauroc"), "unseen": ("r1", "rauroc"), "fashion": ("fashion_r1", "fashion_rauroc")}


def test_uncertainty_truth_recomputes_each_runs_recorded_r1_and_r_auroc(tiny, monkeypatch):
    """The frame's R@1 and the AUROC of its u (and of u's rank) at flagging R@1 errors are the run's recorded R@1
    and R-AUROC on every set; u is the loaded model's; u_rank is the average rank scaled to [0, 1]."""
    from hedgekit.evaluation.metrics import r_auroc
    from hedgekit.training.upstream import predict

    fixed = recipe.eval_sets(TINY.eval_per_class)  # the fixture draws fresh images per call: fix one draw
    monkeypatch.setattr(recipe, "eval_sets", lambda per_class: fixed)
    recs = {m: benchmark.run_one(m, 2, "fast") for m in ("standin", "other")}
    frame = benchmark.uncertainty_truth("standin,other", seed=2, budget="fast")
    models = {m: benchmark.load_run_model(m, 2, "fast") for m in recs}
    assert list(frame.columns) == ["method", "set", "image", "label", "u", "r1_correct", "u_rank"]
    assert list(dict.fromkeys(zip(frame["method"], frame["set"]))) == [
        (m, s) for m in ("standin", "other") for s in ("up", "unseen", "fashion")]
    for (m, name), g in frame.groupby(["method", "set"], sort=False):
        x, y = fixed[name]
        r1_key, rauroc_key = RECORDED[name]
        assert 0 < g["r1_correct"].sum() < len(g)  # both kinds: R-AUROC is defined
        assert g["r1_correct"].mean() == pytest.approx(recs[m][r1_key], abs=1e-12)
        assert r_auroc(g["u"], g["r1_correct"]) == pytest.approx(recs[m][rauroc_key], abs=1e-12)
        assert r_auroc(g["u_rank"], g["r1_correct"]) == pytest.approx(recs[m][rauroc_key], abs=1e-12)
        np.testing.assert_array_equal(g["image"], np.arange(len(y)))
        np.testing.assert_array_equal(g["label"], y.numpy())
        np.testing.assert_allclose(g["u"], predict(models[m], x)["uncertainty"])
        u = g["u"].to_numpy()
        below, tied = (u[None, :] < u[:, None]).sum(1), (u[None, :] == u[:, None]).sum(1)
        np.testing.assert_allclose(g["u_rank"], (below + (tied - 1) / 2) / (len(u) - 1))  # average ranks
        assert g["u_rank"].min() == 0 and g["u_rank"].max() == 1
    only = benchmark.uncertainty_truth(["other"], seed=2, budget="fast", sets="fashion")
    pd.testing.assert_frame_equal(only, frame[(frame["method"] == "other") & (frame["set"] == "fashion")]
                                  .reset_index(drop=True))


def test_uncertainty_truth_refuses_bad_input_and_runs_not_cached(tiny):
    benchmark.run_one("standin", 0, "fast")
    for methods in ([], "", " , "):
        with pytest.raises(benchmark.InputError, match="at least one method, from standin, other"):
            benchmark.uncertainty_truth(methods)
    with pytest.raises(benchmark.InputError, match=r"unknown method\(s\) \['nope'\]; choose from standin, other"):
        benchmark.uncertainty_truth(["standin", "nope"])
    with pytest.raises(benchmark.InputError, match=r"evaluation sets \(up, unseen, fashion\); got \['upstream'\]"):
        benchmark.uncertainty_truth(["standin"], sets=("upstream", "unseen"))
    with pytest.raises(benchmark.InputError, match=r"evaluation sets \(up, unseen, fashion\); got \[\]"):
        benchmark.uncertainty_truth(["standin"], sets=())
    with pytest.raises(benchmark.InputError, match="train it with `python -m hedgekit url-benchmark --methods other "
                                                   "--seeds 1 --budget fast`"):
        benchmark.uncertainty_truth(["standin", "other"], seed=0, budget="fast")
    assert len(tiny) == 1  # nothing trained

# ---------------------------------------------------------------------- the code hash of cached runs
def test_closure_follows_hedgekit_imports_of_the_method_only():
    closure = code_hash.module_closure(["hedgekit.methods.nivmf"])
    assert list(closure) == sorted(closure)
    assert {"hedgekit.methods.nivmf", "hedgekit.methods.vmf", "hedgekit.methods.upstream"} <= set(closure)
    assert closure["hedgekit.methods.vmf"].endswith("vmf.py")
    assert "hedgekit.methods.ce" not in closure and "hedgekit.methods" not in closure  # nor the package __init__
    assert not any(name.startswith(("torch", "numpy", "scipy")) for name in closure)
    files = recipe._code_files("nivmf")  # united with the runner's closure, without the other methods' modules
    assert {"hedgekit.methods.vmf", "hedgekit.training.upstream", "hedgekit.papers.url.protocol",
            "hedgekit.nets.backbones", "hedgekit.data.ndigit", "hedgekit.evaluation.metrics"} <= set(files)
    assert "hedgekit.methods.ce" not in files and "hedgekit.methods.ce" in recipe._code_files("ce")


def test_code_key_changes_with_shared_and_runner_modules_and_is_deterministic(monkeypatch):
    budget = benchmark.BUDGETS["fast"]
    key = benchmark.run_config(budget, "nivmf")
    assert benchmark.run_config(budget, "nivmf") == key and set(key) == {"train", "eval_per_class", "embed_dim", "code"}
    ce = benchmark.run_config(budget, "ce")["code"]
    assert ce != key["code"]
    real = code_hash.source_text
    for edited in ("methods/vmf.py", "training/upstream.py", "evaluation/metrics.py"):
        # an edit to a shared module (imported by nivmf) or a runner module, without touching the real file
        monkeypatch.setattr(code_hash, "source_text",
                            lambda path, edited=edited: real(path) + ("# edited\n" if path.endswith(edited) else ""))
        assert benchmark.run_config(budget, "nivmf")["code"] != key["code"], edited
        assert (benchmark.run_config(budget, "ce")["code"] == ce) == (edited == "methods/vmf.py")  # ce imports no vmf
    monkeypatch.setattr(code_hash, "source_text", real)
    assert benchmark.run_config(budget, "nivmf") == key


def test_a_record_with_the_old_key_is_stale(tiny):
    benchmark.run_one("standin", 0, "fast")
    path = benchmark.run_path("standin", 0, "fast")
    rec = json.loads(path.read_text())
    rec["config"]["method_source"] = rec["config"].pop("code")  # as written before the code hash covered imports
    path.write_text(json.dumps(rec))
    assert benchmark.cached_runs("fast").empty
    assert benchmark.run_one("standin", 0, "fast")["source"] == "trained now" and len(tiny) == 2


def test_a_budget_applies_its_per_method_settings_and_keys_the_cache_on_them():
    b = benchmark.BUDGETS["converged"]
    for method, s in b.settings.items():
        assert s.why, f"{method}'s setting needs its reason"
        cfg = b.train_config(method)
        assert cfg.steps == (s.steps or b.train.steps) and cfg.lr == (s.lr or b.train.lr)
        assert b.hparams(method) == s.hparams
        benchmark.build_model(method, 0, **b.hparams(method))  # every hyper-parameter is one the head takes
        config = benchmark.run_config(b, method)
        assert config["train"]["steps"] == cfg.steps and config.get("hparams", {}) == s.hparams
    assert benchmark.BUDGETS["paper"].train_config("losspred") == benchmark.BUDGETS["paper"].train
    assert "hparams" not in benchmark.run_config(benchmark.BUDGETS["paper"], "losspred")  # old records keep their key


def test_settings_table_lists_every_method_with_its_reason(tiny):
    b = benchmark.Budget("fast", TINY.train, 4, settings={"other": benchmark.Setting(steps=7, hparams={"x": 1},
                                                                                      why="because")})
    table = benchmark.settings_table(b)
    assert list(table.index) == ["standin", "other"]
    assert table.loc["other"].tolist() == [7, TINY.train.lr, "x=1", "because"]
    assert table.loc["standin", "why"] == "budget default" and table.loc["standin", "steps"] == TINY.train.steps


def test_sweep_budgets_scale_every_methods_learning_rate_and_keep_the_rest():
    base = benchmark.BUDGETS["converged"]
    half, double = benchmark.sweep_budgets("converged", (0.5, 2.0))
    assert (half.name, double.name) == ("converged-lr0.5x", "converged-lr2x")
    for m in benchmark.method_registry():
        assert half.train_config(m).lr == pytest.approx(base.train_config(m).lr / 2)
        assert double.train_config(m).steps == base.train_config(m).steps and double.hparams(m) == base.hparams(m)
    assert benchmark.resolve_budget("converged-lr2x") == double
    with pytest.raises(benchmark.InputError, match="> 0"):
        benchmark.sweep_budgets("converged", (0.0,))


def test_sweep_runs_pool_one_seed_of_each_setting_and_skip_methods_that_did_not_train(tiny, monkeypatch):
    runs = benchmark.run_benchmark(["standin", "other"], [0, 1], "fast", progress=False)
    # the tiny random data teach nothing: lower the bar so that "standin" trained and "other" (one seed) did not
    monkeypatch.setattr(leaderboard, "TRAINED_AT", {"up_r1": -1.0})
    runs.loc[(runs["method"] == "other") & (runs["seed"] == 1), "up_r1"] = -2.0
    calls = len(tiny)
    pooled = benchmark.sweep_runs(runs, seed=0, factors=(0.5, 2.0))
    assert len(tiny) - calls == 2  # standin at two learning rates; "other" is not swept
    assert sorted(zip(pooled["method"], pooled["budget"])) == [
        ("standin", "fast"), ("standin", "fast-lr0.5x"), ("standin", "fast-lr2x")]
    assert set(pooled["seed"]) == {0}
    with pytest.raises(benchmark.InputError, match="one budget"):
        benchmark.sweep_runs(pooled)


# ------------------------------------------------------------------ interrupts (issue: trustworthy under faults)
def test_url_run_interrupted_between_weights_and_metrics_is_retrained(tiny, monkeypatch):
    calls = tiny
    first = benchmark.run_one("standin", 0, "fast")
    assert first["source"] == "trained now" and benchmark.run_one("standin", 0, "fast")["source"] == "cache"
    record = benchmark.run_path("standin", 0, "fast")
    weights = record.with_suffix(".pt")
    old_record, old_weights = record.read_text(), weights.read_bytes()
    real_write = url_runs.atomic_write  # the zoo writes URL runs (`hedgekit.zoo.url_runs.save_url_run`)

    def metrics_interrupted(path):
        if str(path).endswith(".json"):
            raise KeyboardInterrupt  # after the new weights, before the metrics
        return real_write(path)

    monkeypatch.setattr(url_runs, "atomic_write", metrics_interrupted)
    real_build = benchmark.build_model  # other initial weights, so that the retrained weights differ
    monkeypatch.setattr(recipe, "build_model", lambda method, seed, n_classes=70: real_build(method, seed + 7,
                                                                                                 n_classes))
    with pytest.raises(KeyboardInterrupt):
        benchmark.run_one("standin", 0, "fast", retrain=True)
    assert record.read_text() == old_record and weights.read_bytes() != old_weights  # new weights, old metrics
    assert [p.name for p in record.parent.iterdir() if p.name.endswith(".tmp")] == []
    monkeypatch.setattr(url_runs, "atomic_write", real_write)
    assert benchmark.cached_runs("fast").empty  # the mismatched pair is not a run
    with pytest.raises(benchmark.CheckpointError, match="not the weights its metrics were measured on"):
        benchmark.load_run_model("standin", 0, "fast")
    n = len(calls)
    again = benchmark.run_one("standin", 0, "fast")
    assert again["source"] == "trained now" and len(calls) == n + 1  # retrained, not reported as cached
    assert json.loads(record.read_text())["weights_sha256"] == _sha256(weights)
    assert benchmark.run_one("standin", 0, "fast")["source"] == "cache"


def _sha256(path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_url_run_interrupted_while_writing_its_weights_keeps_the_old_run(tiny, monkeypatch):
    calls = tiny
    benchmark.run_one("standin", 1, "fast")
    record = benchmark.run_path("standin", 1, "fast")
    before = record.with_suffix(".pt").read_bytes()

    def half_written(obj, f, *args, **kwargs):
        with open(f, "wb") as out:
            out.write(b"PK\x03\x04 half")
        raise KeyboardInterrupt

    with monkeypatch.context() as m, pytest.raises(KeyboardInterrupt):
        m.setattr(torch, "save", half_written)
        benchmark.run_one("standin", 1, "fast", retrain=True)
    assert record.with_suffix(".pt").read_bytes() == before
    assert [p.name for p in record.parent.iterdir() if p.name.endswith(".tmp")] == []
    assert benchmark.run_one("standin", 1, "fast")["source"] == "cache"  # the old pair still matches


def test_an_ad_hoc_budget_trains_under_its_name_and_the_registered_one_finds_its_run_stale(tiny):
    own = benchmark.Budget("fast", UpstreamConfig(steps=2, classes_per_batch=4, per_class=2, log_every=1), 4)
    spec = benchmark.run_spec("standin", 0, own)
    assert spec.budget == own and spec.name == "url-standin-fast-s0"  # the object: no registered budget is it
    assert benchmark.run_spec("standin", 0, TINY).budget == "fast"  # the registered one: by its name
    rec = benchmark.run_one("standin", 0, own)
    assert rec["source"] == "trained now" and rec["config"]["train"]["steps"] == 2 and len(tiny) == 1
    assert benchmark.run_one("standin", 0, own)["source"] == "cache" and len(tiny) == 1
    assert benchmark.cached_runs("fast").empty  # stale for the registered fast budget
    assert benchmark.run_one("standin", 0, "fast")["source"] == "trained now" and len(tiny) == 2
    assert benchmark.run_one("standin", 0, own)["source"] == "trained now" and len(tiny) == 3


# ---------------------------------------------------------------------------------- the ledger


@pytest.fixture
def fixed_sets(tiny, monkeypatch):
    """The tiny fixture with one draw of its evaluation images, so that a retrained run measures the same."""
    fixed = recipe.eval_sets(TINY.eval_per_class)
    monkeypatch.setattr(recipe, "eval_sets", lambda per_class: fixed)
    return tiny


def _url_ledger():
    return ledger.ledger_path("url")


def test_the_cli_records_each_run_in_the_ledger_as_it_finishes(fixed_sets, tmp_path, monkeypatch, capsys):
    real_fit = recipe.fit_upstream

    def seed_1_interrupted(model, *args, seed=0, **kwargs):
        if seed == 1:
            assert len(ledger.records("url")) == 1  # seed 0 is in the ledger before seed 1 trains
            raise KeyboardInterrupt
        return real_fit(model, *args, seed=seed, **kwargs)

    monkeypatch.setattr(recipe, "fit_upstream", seed_1_interrupted)
    assert cli.main(["url-benchmark", "--methods", "standin", "--seeds", "2", "--fast", "--quiet",
                     "--out", str(tmp_path)]) == 130  # interrupted (Ctrl-C) while seed 1 trains
    assert "recorded in the ledger" in capsys.readouterr().err
    assert [r["seed"] for r in ledger.records("url")] == [0]  # what finished is kept
    monkeypatch.setattr(recipe, "fit_upstream", real_fit)
    assert cli.main(["url-benchmark", "--methods", "standin", "--seeds", "2", "--fast", "--quiet",
                     "--out", str(tmp_path)]) == 0
    assert str(_url_ledger()) in capsys.readouterr().out
    held = ledger.records("url")
    assert [r["model"] for r in held] == ["url-standin-fast-s0", "url-standin-fast-s1"]
    fingerprint = mnist_source().fingerprint
    for r in held:
        path = benchmark.run_path("standin", r["seed"], "fast")
        run = json.loads(path.read_text())
        spec = ledger.spec_of(r)
        assert spec == benchmark.run_spec("standin", r["seed"], "fast") and r["code_key"] == ledger.code_key(spec)
        assert r["group"] == benchmark.LEDGER_GROUP
        assert set(r["measures"]) == {m for m in leaderboard.MEASURES if m in run} and "train_seconds" not in r["measures"]
        for m, v in r["measures"].items():  # the run's own metrics, exactly (null where it has none: NaN)
            assert v == run[m] or (v is None and math.isnan(run[m])), m
        assert r["checkpoint_sha256"] == run["weights_sha256"] == _sha256(path.with_suffix(".pt"))
        assert r["train_seconds"] == run["train_seconds"] and r["device"] == "cpu" and r["tolerance"] == 0
        assert r["torch"] == torch.__version__ and r["hedgekit"] == run["versions"]["hedgekit"] != ""
        assert r["data_fingerprint"] == fingerprint and r["precision"] == "float32"
    before = _url_ledger().read_bytes()
    assert cli.main(["url-benchmark", "--methods", "standin", "--seeds", "2", "--fast", "--quiet", "--retrain",
                     "--out", str(tmp_path)]) == 0  # re-measured on the CPU: the same, exactly
    assert len(fixed_sets) == 4 and _url_ledger().read_bytes() == before  # retrained, nothing rewritten


def test_a_run_that_disagrees_with_the_ledger_stops_and_is_not_rewritten(fixed_sets):
    benchmark.run_benchmark(["standin"], 1, "fast", progress=False, record=True)
    lines = _url_ledger().read_text().splitlines()
    r = json.loads(lines[0])
    r["measures"]["r1"] += 0.25  # what another training of it measured
    _url_ledger().write_text(json.dumps(r, sort_keys=True) + "\n")
    tampered = _url_ledger().read_bytes()
    for record in (True, False):  # the CLI's run, and a notebook's (which only checks)
        with pytest.raises(ledger.LedgerConflict, match=r"url-standin-fast-s0's benchmark measures.*r1 .*delete the "
                                                        r"new checkpoint \(the cache's url/fast/standin-s0.json and"):
            benchmark.run_benchmark(["standin"], 1, "fast", progress=False, record=record)
    assert _url_ledger().read_bytes() == tampered


def test_a_notebooks_runs_are_checked_not_recorded_nor_ad_hoc_ones(tiny):
    benchmark.run_benchmark(["standin"], 2, "fast", progress=False)  # what notebook 09 calls
    own = benchmark.Budget("fast", UpstreamConfig(steps=2, classes_per_batch=4, per_class=2, log_every=1), 4)
    benchmark.run_one("standin", 0, own, record=True)  # an ad-hoc budget: no name the ledger could rebuild it by
    assert ledger.records("url") == []


def test_ledger_runs_reads_the_budgets_runs_under_todays_code_key(fixed_sets):
    runs = benchmark.run_benchmark(["standin", "other"], 2, "fast", progress=False, record=True)
    assert benchmark.ledger_runs("paper").empty and list(benchmark.ledger_runs("paper")) >= ["method", "seed"]
    back = benchmark.ledger_runs("fast")
    assert list(zip(back["method"], back["seed"])) == [("other", 0), ("other", 1), ("standin", 0), ("standin", 1)]
    assert (back["source"] == "ledger").all() and (back["budget"] == "fast").all()
    mine = runs.sort_values(["method", "seed"], ignore_index=True)
    columns = [m for m in (*leaderboard.MEASURES, "train_seconds") if m in runs]
    pd.testing.assert_frame_equal(back[columns], mine[columns])  # every measure exactly, NaN where undefined
    pd.testing.assert_frame_equal(leaderboard.leaderboard(back), leaderboard.leaderboard(mine).drop(
        columns=[c for c in leaderboard.leaderboard(mine) if c.startswith(leaderboard.METRICS["cpu_seconds"])]))
    lines = [json.loads(t) for t in _url_ledger().read_text().splitlines()]
    lines[0]["code_key"] = "000000000000"  # a record of earlier code: history, not read
    _url_ledger().write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in lines))
    assert list(zip(benchmark.ledger_runs("fast")["method"], benchmark.ledger_runs("fast")["seed"])) == [
        ("other", 1), ("standin", 0), ("standin", 1)]


def test_the_committed_ledger_holds_every_converged_run_trained_on_the_cpu_by_todays_code():
    from hedgekit.paths import PACKAGE_DIR

    runs = benchmark.ledger_runs("converged", PACKAGE_DIR / "ledger")
    assert sorted(zip(runs["method"], runs["seed"])) == [(m, s) for m in sorted(recipe.method_registry())
                                                         for s in range(3)]
    assert (runs["device"] == "cpu").all() and runs["train_seconds"].gt(0).all()
    held = [r for r in ledger.records("url", PACKAGE_DIR / "ledger") if r["spec"]["budget"] == "converged"]
    assert all(r["tolerance"] == 0 and r["data_fingerprint"] and r["torch"] for r in held)
    assert all(set(r["measures"]) >= set(leaderboard.MEASURES) - {"up_acc"} for r in held)
    # notebook 09's committed full-mode leaderboard: every mean ± std cell it shows of every method
    committed = PACKAGE_DIR.parent / "notebooks/report/assets/09_url_benchmark/leaderboard.md"
    rows = {line.split(" | ")[0].strip("| "): line.split(" | ")[1:4] for line in committed.read_text().splitlines()
            if line.startswith("| ") and not line.startswith("| method")}
    board = leaderboard.leaderboard(runs)
    assert sorted(rows) == sorted(leaderboard.label(m) for m in board.index)
    for method, row in board.iterrows():
        for cell, col in zip(rows[leaderboard.label(method)], ("R-AUROC (down)", "R@1 (down)", "R-AUROC unseen")):
            assert cell == f"{row[col]:.3f} ± {row[col + ' ±']:.3f}", (method, col)


# ---------------------------------------------------------------------------------- one method's failure is one row


class DivergesAtStep2(StandIn):
    """The stand-in whose loss is NaN from its third call on: the trainer (log_every 1) stops at step 2."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls = 0

    def loss(self, out, labels):
        self.calls += 1
        return super().loss(out, labels) * (math.nan if self.calls > 2 else 1.0)


class NaNAtEvaluation(StandIn):
    """Trains like the stand-in; in eval mode its u(x) is NaN for every other image."""

    def forward(self, features):
        out = super().forward(features)
        if not self.training:
            out["uncertainty"] = out["uncertainty"].clone()
            out["uncertainty"][::2] = math.nan
        return out


@pytest.fixture
def failing(tiny, monkeypatch):
    registry = {"standin": StandIn, "diverges": DivergesAtStep2, "nan_u": NaNAtEvaluation}
    monkeypatch.setattr(recipe, "method_registry", lambda: registry)
    monkeypatch.setattr(leaderboard, "TRAINED_AT", {"up_r1": 0.0, "up_acc": 0.0})  # random data: every finite run counts
    monkeypatch.setattr(leaderboard, "CHANCE", 0.0)  # and its u(x) at chance counts as learned
    return tiny


def test_a_diverging_method_is_one_row_and_the_rest_is_trained_written_and_shown(failing, tmp_path, capsys):
    out_dir = tmp_path / "lb"
    assert cli.main(["url-benchmark", "--methods", "standin,diverges,nan_u", "--seeds", "2", "--fast", "--quiet",
                     "--out", str(out_dir)]) == 0
    out = capsys.readouterr().out
    assert "6 runs, 2 trained now, 0 from the cache" in out and "4 diverged (not cached" in out
    rows = {line.split(" | ")[0].strip("| "): line for line in out.splitlines() if line.startswith("| ")}
    assert rows["standin"].endswith("| 2 | trained |") and "—" not in rows["standin"]
    assert rows["diverges"].endswith("| diverged at step 2 (seed 0), diverged at step 2 (seed 1); 0 of 2 seeds "
                                     "trained |")
    assert rows["diverges"].count("—") == len(benchmark.METRICS)  # no metric of a diverged run is shown
    # TINY trains 3 steps (0, 1, 2): a model whose u(x) is NaN after its last step diverged at step 2
    assert "diverged at step 2 (seed 0), diverged at step 2 (seed 1); 0 of 2 seeds trained" in rows["nan_u"]
    assert "loss nan" in out and "u(x) is NaN or inf for 20 of 40 images of the upstream test set" in out
    md = (out_dir / "leaderboard-fast.md").read_text()
    assert "| standin |" in md and "diverged at step 2 (seed 1)" in md
    board = pd.read_csv(out_dir / "leaderboard-fast.csv", index_col="method")
    assert list(board.index) == ["standin", "diverges", "nan_u"]  # the ranked one first
    assert board.loc["standin", "trained seeds"] == 2 and board.loc["diverges", "trained seeds"] == 0
    # nothing of the diverged runs is cached: the next call reads the trained ones back and tries those again
    assert sorted(p.name for p in (tmp_path / "url" / "fast").glob("*.json")) == ["standin-s0.json", "standin-s1.json"]
    assert cli.main(["url-benchmark", "--methods", "standin,diverges", "--seeds", "2", "--fast", "--quiet",
                     "--out", str(out_dir)]) == 0
    assert "4 runs, 0 trained now, 2 from the cache" in capsys.readouterr().out


def test_a_diverged_seed_leaves_the_methods_other_seeds_in_its_row(failing, monkeypatch):
    real = recipe.fit_upstream

    def seed_1_diverges(model, *args, seed=0, **kwargs):
        if seed == 1:
            raise FloatingPointError("training diverged at step 7 (loss inf); lower the learning rate")
        return real(model, *args, seed=seed, **kwargs)

    monkeypatch.setattr(recipe, "fit_upstream", seed_1_diverges)
    runs = benchmark.run_benchmark(["standin"], 3, "fast", progress=False)
    assert list(runs["source"]) == ["trained now", "diverged", "trained now"]
    assert list(benchmark.run_status(runs)) == ["trained", "did not train", "trained"]
    board = benchmark.leaderboard(runs)
    assert board.loc["standin", "status"] == "diverged at step 7 (seed 1)"
    finite = runs.loc[runs["seed"] != 1, "down_r1"]
    assert board.loc["standin", "R@1 (down)"] == pytest.approx(finite.mean())  # over the seeds that did not diverge
    assert "| diverged at step 7 (seed 1); 2 of 3 seeds trained |" in benchmark.leaderboard_markdown(board)
    assert benchmark.ranked(board).empty and benchmark.trained_runs(runs).empty
