"""Tests of hedgekit.zoo.store: checkpoint I/O and its hardening, provenance, staleness and load-or-train.

Nothing here touches the user's cache (the fixtures of tests/zoo/conftest.py)."""
import math
import os
import pickle
import re
from dataclasses import asdict

import numpy as np
import pytest
import torch

import hedgekit.zoo as zoo
from hedgekit.checks import resolve_device
from hedgekit.errors import CheckpointError, InputError
from hedgekit.hardware import device_description
from hedgekit.methods.fast.spe import SPE
from hedgekit.nets import build_model
from hedgekit.paths import PACKAGE_DIR, cache_path
from hedgekit.zoo import Spec, load_checkpoint, load_or_train, recipes, save_checkpoint, store

pytestmark = pytest.mark.filterwarnings("ignore:Converting a tensor with requires_grad=True to a scalar")


def _same_metrics(m1: dict, m2: dict) -> bool:
    return m1.keys() == m2.keys() and all(
        (math.isnan(m1[k]) and math.isnan(m2[k])) or m1[k] == m2[k] for k in m1)


def _outputs(model, x):
    with torch.no_grad():
        e = model.eval()(x)
    return e.mean, e.var, model.match.a.detach(), model.match.b.detach()


def test_checkpoint_round_trip(tmp_path, trained_like_model):
    x = torch.rand(5, 1, 28, 28, generator=torch.Generator().manual_seed(1))
    meta = {"metrics": {"ap_clean": 0.9, "tau": float("nan")}, "history": [{"step": 0, "loss": 1.5}], "note": None}
    path = save_checkpoint(tmp_path / "sub" / "m.pt", trained_like_model, meta)
    assert path.is_file() and not list(tmp_path.glob("sub/*.tmp"))  # atomic write leaves no temp file
    model, meta2 = load_checkpoint(path)
    assert not model.training and model.config == trained_like_model.config
    for a, b in zip(_outputs(model, x), _outputs(trained_like_model, x)):
        assert torch.equal(a, b)
    assert meta2["history"] == meta["history"] and meta2["note"] is None and math.isnan(meta2["metrics"]["tau"])


def _save(tmp_path, model, name="m.pt"):
    return save_checkpoint(tmp_path / name, model, {"metrics": {}})


def test_missing_checkpoint(tmp_path):
    with pytest.raises(CheckpointError, match="no checkpoint at"):
        load_checkpoint(tmp_path / "nope.pt")
    with pytest.raises(CheckpointError, match="no checkpoint at"):
        load_checkpoint(tmp_path)  # a directory


def test_random_bytes(tmp_path):
    p = tmp_path / "junk.pt"
    p.write_bytes(np.random.default_rng(0).bytes(5000))
    with pytest.raises(CheckpointError, match=r"(?s)junk.pt is not a readable hedgekit checkpoint .*delete it to retrain"):
        load_checkpoint(p)


@pytest.mark.parametrize("fraction", [0.0, 0.1, 0.5, 0.99])
def test_truncated_file(tmp_path, trained_like_model, fraction):
    p = _save(tmp_path, trained_like_model)
    data = p.read_bytes()
    p.write_bytes(data[: int(len(data) * fraction)])
    with pytest.raises(CheckpointError, match="not a readable hedgekit checkpoint"):
        load_checkpoint(p)


@pytest.mark.parametrize(
    "payload",
    [
        {"format": "hedgekit-checkpoint-v0", "state_dict": {}},
        {"state_dict": {}},
        torch.zeros(3),
        [1, 2, 3],
    ],
    ids=["old-format", "no-format", "tensor", "list"],
)
def test_valid_torch_file_wrong_format(tmp_path, payload):
    p = tmp_path / "other.pt"
    torch.save(payload, p)
    with pytest.raises(CheckpointError, match=f"is not a {zoo.FORMAT} file; delete it to retrain"):
        load_checkpoint(p)


def test_arbitrary_pickle_is_refused(tmp_path):
    """weights_only loading: a pickle that would run code is reported, not executed."""
    p = tmp_path / "evil.pt"
    with open(p, "wb") as f:
        pickle.dump({"format": zoo.FORMAT, "x": os.system}, f, protocol=2)
    with pytest.raises(CheckpointError, match="not a readable hedgekit checkpoint"):
        load_checkpoint(p)


def test_tampered_weights_fail_hash(tmp_path, trained_like_model):
    p = _save(tmp_path, trained_like_model)
    payload = torch.load(p, weights_only=True)
    key = next(iter(payload["state_dict"]))
    payload["state_dict"][key].view(-1)[0] += 1e-3  # one weight, old hash kept
    torch.save(payload, p)
    with pytest.raises(CheckpointError, match="(?s)weights, config or metadata do not match their recorded SHA-256.*delete"):
        load_checkpoint(p)


@pytest.mark.parametrize("change", [dict(dim=5), dict(components=1), dict(kind="point", components=1), dict(depth=3)])
def test_config_mismatch(tmp_path, trained_like_model, change):
    p = _save(tmp_path, trained_like_model)
    payload = torch.load(p, weights_only=True)
    payload["config"].update(change)
    payload["sha256"] = store._payload_hash(payload)  # a consistent file whose config does not fit its weights
    torch.save(payload, p)
    with pytest.raises(CheckpointError, match="weights do not fit the recorded model config"):
        load_checkpoint(p)


def test_right_format_missing_config(tmp_path, trained_like_model):
    p = _save(tmp_path, trained_like_model)
    payload = torch.load(p, weights_only=True)
    del payload["config"]
    torch.save(payload, p)
    with pytest.raises(CheckpointError, match="lacks its weights, config or metadata"):
        load_checkpoint(p)


@pytest.mark.parametrize("drop", ["state_dict", "meta"])
def test_right_format_missing_keys(tmp_path, trained_like_model, drop):
    p = _save(tmp_path, trained_like_model)
    payload = torch.load(p, weights_only=True)
    del payload[drop]
    torch.save(payload, p)
    with pytest.raises(CheckpointError):
        load_checkpoint(p)


def test_load_or_train_trains_once_then_loads(sandbox):
    spec = Spec(kind="hib", n_digits=1, dim=2, preset="fast", seed=0)
    model, meta = load_or_train(spec, progress=False)
    assert len(sandbox["fits"]) == 1 and sandbox["fits"][0].steps == 25
    path = sandbox["root"] / "cache" / "checkpoints" / f"{spec.name}.pt"
    assert path.is_file()
    assert meta["name"] == spec.name and meta["eval_images"] == 100
    assert meta["spec"]["preset"] == "fast" and meta["train_config"]["steps"] == 25
    assert len(meta["history"]) >= 1 and set(meta["versions"]) >= {"hedgekit", "torch", "numpy", "python"}
    assert set(meta["metrics"]) >= {"ap_clean", "ap_corrupt", "knn_clean", "knn_corrupt"}

    model2, meta2 = load_or_train(spec, progress=False)
    assert len(sandbox["fits"]) == 1  # loaded from the cache, not trained again
    assert _same_metrics(meta["metrics"], meta2["metrics"])
    assert meta2["history"] == meta["history"]
    x, _ = sandbox["sets"]["test_seen"].tensors(True)
    for a, b in zip(_outputs(model, x[:20]), _outputs(model2, x[:20])):
        assert torch.equal(a, b)

    load_or_train(spec, progress=False, retrain=True, save=False)
    assert len(sandbox["fits"]) == 2  # retrain=True trains even with a cached checkpoint
    # the user's own cache was never written
    assert not (PACKAGE_DIR.parent / "data" / "checkpoints" / f"{spec.name}.pt").exists()


def test_load_or_train_save_false_and_shipped_first(sandbox, trained_like_model):
    spec = Spec(kind="point", n_digits=1, dim=2, preset="fast", seed=1)
    load_or_train(spec, progress=False, save=False)
    assert not (sandbox["root"] / "cache" / "checkpoints" / f"{spec.name}.pt").exists()
    assert len(sandbox["fits"]) == 1
    # a shipped checkpoint with the name wins over training
    shipped = build_model("point", n_digits=1, dim=2)
    save_checkpoint(store.SHIPPED_DIR / f"{spec.name}.pt", shipped, {"name": spec.name, "metrics": {"from": 1.0}})
    model, meta = load_or_train(spec, progress=False)
    assert meta["metrics"] == {"from": 1.0} and len(sandbox["fits"]) == 1 and meta["source"] == "shipped"


def test_a_checkpoint_saved_for_another_spec_is_refused(sandbox):
    """Requirement: a D = 3 checkpoint under a D = 2 name (or any other mismatch) is refused, naming it."""
    spec = Spec(kind="hib", n_digits=1, dim=2, preset="fast", seed=7)
    path = store.SHIPPED_DIR / f"{spec.name}.pt"
    save_checkpoint(path, build_model("hib", n_digits=1, dim=3), {"name": spec.name})
    with pytest.raises(CheckpointError, match=r"dim=3 \(expected 2\)"):
        load_or_train(spec, progress=False)
    save_checkpoint(path, build_model("hib", n_digits=1, dim=2, components=2), {"name": spec.name})
    with pytest.raises(CheckpointError, match=r"components=2 \(expected 1\)"):
        load_or_train(spec, progress=False)
    other = Spec(kind="hib", n_digits=1, dim=2, preset="fast", seed=8)
    save_checkpoint(path, build_model("hib", n_digits=1, dim=2), {"name": other.name})
    with pytest.raises(CheckpointError, match="saved for 'hib-n1-d2-c1-beta0.0001-fast-s8'"):
        load_or_train(spec, progress=False)
    save_checkpoint(path, build_model("hib", n_digits=1, dim=2), {"name": spec.name})
    assert load_or_train(spec, progress=False)[1]["source"] == "shipped" and not sandbox["fits"]


def test_a_changed_preset_retrains_instead_of_reusing_stale_weights(sandbox, monkeypatch):
    spec = Spec(kind="hib", n_digits=1, dim=2, preset="fast", seed=3)
    load_or_train(spec, progress=False)
    path = zoo.find_checkpoint(spec)
    assert path is not None and not zoo.is_stale(path, spec) and len(sandbox["fits"]) == 1
    monkeypatch.setitem(zoo.PRESETS["fast"]["hib"], "k", 3)  # the recipe changes under the same name
    assert spec.train_config().k == 3 and zoo.is_stale(path, spec) and zoo.find_checkpoint(spec) is None
    _, meta = load_or_train(spec, progress=False)
    assert len(sandbox["fits"]) == 2 and sandbox["fits"][1].k == 3 and meta["train_config"]["k"] == 3
    assert zoo.find_checkpoint(spec) == path and not zoo.is_stale(path, spec)  # the cache now holds the new recipe
    load_or_train(spec, progress=False)
    assert len(sandbox["fits"]) == 2
    # asked again (the app does, on every rerun), the unchanged file is not read again
    reads = []
    real_load = torch.load
    monkeypatch.setattr(torch, "load", lambda *a, **kw: reads.append(a[0]) or real_load(*a, **kw))
    assert not zoo.is_stale(path, spec) and zoo.find_checkpoint(spec) == path and reads == []
    monkeypatch.setattr(torch, "load", real_load)
    # a checkpoint written before a TrainConfig field existed counts that field as its default
    model, meta = zoo.load_checkpoint(path)
    del meta["train_config"]["occlusion_p"]
    save_checkpoint(path, model, meta)
    assert not zoo.is_stale(path, spec)


def test_precision_says_how_to_train_not_what_the_name_means(sandbox):
    """A model trained with a bfloat16 body records it, serves its name afterwards in any precision, and a
    float32 checkpoint is not stale for a bfloat16 request either (like the device, precision is not named)."""
    spec = Spec(kind="hib", n_digits=1, dim=2, preset="fast", seed=5)
    _, meta = load_or_train(spec, progress=False, precision="bfloat16")
    assert [c.precision for c in sandbox["fits"]] == ["bfloat16"] and meta["train_config"]["precision"] == "bfloat16"
    path = zoo.find_checkpoint(spec)
    assert path is not None and not zoo.is_stale(path, spec)
    _, meta2 = load_or_train(spec, progress=False)  # float32 asked: the bfloat16-trained checkpoint is loaded
    assert meta2["source"] == "cache" and len(sandbox["fits"]) == 1
    other = Spec(kind="point", n_digits=1, dim=2, preset="fast", seed=5)
    load_or_train(other, progress=False)
    assert sandbox["fits"][-1].precision == "float32"
    assert load_or_train(other, progress=False, precision="bfloat16")[1]["source"] == "cache"
    with pytest.raises(InputError, match="precision must be one of"):
        load_or_train(Spec(kind="hib", n_digits=1, dim=2, preset="fast", seed=6), progress=False, precision="half")


def test_session_header_names_a_checkpoint_trained_with_a_bfloat16_body(sandbox):
    from hedgekit.repro.report import precision_note
    from hedgekit.repro.session import Session

    bf, fp = (Spec(kind=kind, n_digits=1, dim=2, preset="fast", seed=9) for kind in ("hib", "point"))
    load_or_train(bf, progress=False, precision="bfloat16")
    s = Session("t")
    s.configure(fast=True)
    s.model(bf, progress=False)
    s.model(fp, progress=False)
    assert [c.precision for c in s.checkpoints] == ["bfloat16", "float32"]
    lines = [line for line in s.markdown().splitlines() if line.startswith("- `")]
    assert "fast preset, bfloat16 body, trained in" in lines[0] and "body" not in lines[1]
    assert precision_note("float32") == "" and precision_note("bfloat16") == ", bfloat16 body"


def test_load_or_train_corrupt_cache_raises(sandbox):
    spec = Spec(kind="hib", n_digits=1, dim=2, preset="fast", seed=2)
    path = cache_path("checkpoints", f"{spec.name}.pt")
    path.parent.mkdir(parents=True)  # cache_path creates nothing (a read needs no write access)
    path.write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="delete it to retrain"):
        load_or_train(spec, progress=False)
    assert sandbox["fits"] == []


@pytest.mark.parametrize("spec", [Spec(kind="spe", data="lshapes", preset="fast"),
                                  Spec(kind="spe", data="ndigit", n_digits=1, preset="fast", samples=2),
                                  Spec(kind="pn", data="ndigit", n_digits=1, preset="fast")])
def test_prototype_load_or_train_trains_once_then_loads(proto_sandbox, tmp_path, spec):
    m1, meta1 = zoo.load_or_train(spec, progress=False)
    h1 = zoo.prototype_head(meta1)
    assert meta1["source"] == "trained now" and len(proto_sandbox) == 1
    assert proto_sandbox[0].steps == spec.recipe_config()["steps"]
    path = tmp_path / "cache" / "checkpoints" / f"{spec.name}.pt"
    assert path.is_file() and meta1["path"] == str(path)
    assert meta1["name"] == spec.name and "metrics" in meta1 and meta1["versions"]["torch"]
    m2, meta2 = zoo.load_or_train(spec, progress=False)
    h2 = zoo.prototype_head(meta2)
    assert len(proto_sandbox) == 1 and meta2["source"] == "cache"  # loaded, not retrained
    assert type(h2) is type(h1)
    if isinstance(h1, SPE):
        assert float(h2.sigma_eps2) == pytest.approx(float(h1.sigma_eps2))
        assert (h2.train_sampler, h2.train_samples) == (h1.train_sampler, h1.train_samples)
    for (k, a), b in zip(m1.state_dict().items(), m2.state_dict().values()):
        assert torch.equal(a, b), k
    x = torch.rand(3, *m1.input_shape)
    torch.testing.assert_close(m1.embed(x).mean, m2.embed(x).mean)
    zoo.load_or_train(spec, progress=False, retrain=True)
    assert len(proto_sandbox) == 2


def test_session_records_prototype_checkpoints_and_heads(proto_sandbox):
    from hedgekit.repro.session import Session

    spec = Spec(kind="spe", n_digits=1, preset="fast")
    s1, s2 = Session("t1"), Session("t2")
    s1.configure(fast=True)
    s2.configure(fast=True)
    m1 = s1.model(spec, progress=False)
    s2.model(spec, progress=False)
    assert [c.source for c in s1.checkpoints + s2.checkpoints] == ["trained now", "cache"]
    assert s1.checkpoints[0].name == spec.name and s1.checkpoints[0].steps == 4 and len(s2.checkpoints[0].sha256) == 12
    assert isinstance(s1.head(spec), SPE) and float(s1.head(spec).gamma) == pytest.approx(float(s2.head(spec).gamma))
    assert s1.model(spec) is m1 and len(s1.checkpoints) == 1  # cached within a session


def test_session_records_the_k_each_hib_model_trained_with_and_the_verdict_names_it(sandbox):
    from hedgekit.papers.verdict import training_context
    from hedgekit.repro.session import Session

    s = Session("t")
    s.configure(fast=True)
    s.model(Spec(kind="hib", n_digits=1, preset="fast", samples=3), progress=False)
    s.model(Spec(kind="hib", n_digits=1, preset="fast"), progress=False)
    s.model(Spec(kind="point", n_digits=1, preset="fast"), progress=False)
    assert [c.k for c in s.checkpoints] == [3, 8, None] and [f.k for f in sandbox["fits"][:2]] == [3, 8]
    assert "HIB models drew K = 3/8 samples per input (the paper: 8)." in training_context(s.checkpoints)
    assert "samples per input" not in training_context(s.checkpoints[2:])


def test_checkpoint_without_head_metadata_is_rejected(tmp_path):
    from hedgekit.errors import CheckpointError
    from hedgekit.nets import build_model

    path = zoo.save_checkpoint(tmp_path / "x.pt", build_model("point", 1, 2), {"name": "x"})
    _, meta = zoo.load_checkpoint(path)
    with pytest.raises(CheckpointError, match="prototype-head"):
        zoo.prototype_head(meta)


def _rewrite(path, edit, rehash=False):
    """Load a checkpoint's payload, apply ``edit(payload)``, save it back (with a fresh hash if ``rehash``)."""
    payload = torch.load(path, weights_only=True)
    edit(payload)
    if rehash:
        payload["sha256"] = store._payload_hash(payload)
    torch.save(payload, path)


@pytest.mark.parametrize("edit", [
    lambda p: p["meta"].update(name="hib-n1-d2-c1-beta0.0001-fast-s9"),
    lambda p: p["meta"]["metrics"].update(knn_clean=0.99),
    lambda p: p["meta"]["metrics"].pop("knn_clean"),
    lambda p: p["meta"].update(spec={**p["meta"]["spec"], "beta": 0.1}),
    lambda p: p["meta"].update(extra=1),
    lambda p: p["config"].update(init_var=0.5),
], ids=["name", "metric", "metric-removed", "spec", "new-key", "config"])
def test_edited_metadata_fails_the_hash(tmp_path, trained_like_model, edit):
    spec = Spec(kind="hib", n_digits=1, dim=3, components=2, preset="fast", seed=9)
    meta = {"name": spec.name, "spec": {"beta": 1e-4}, "metrics": {"knn_clean": 0.5, "ap_clean": 0.7}}
    p = save_checkpoint(tmp_path / "m.pt", trained_like_model, meta)
    load_checkpoint(p)  # the untouched file loads
    _rewrite(p, edit)
    with pytest.raises(CheckpointError, match="weights, config or metadata do not match their recorded SHA-256"):
        load_checkpoint(p)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_weights_are_refused_at_load_and_at_save(tmp_path, trained_like_model, bad):
    """A file whose weights are NaN (with a valid hash) is refused by name, with no "NaN pixels?" hint."""
    p = _save(tmp_path, trained_like_model)
    key = sorted(torch.load(p, weights_only=True)["state_dict"])[-1]
    _rewrite(p, lambda pl: pl["state_dict"][key].view(-1).__setitem__(0, bad), rehash=True)
    with pytest.raises(CheckpointError, match=rf"weights {re.escape(key)} hold NaN or inf") as err:
        load_checkpoint(p)
    assert "pixels" not in str(err.value)
    with torch.no_grad():
        dict(trained_like_model.named_parameters())[key].view(-1)[0] = bad
    with pytest.raises(CheckpointError, match="hold NaN or inf"):
        save_checkpoint(tmp_path / "diverged.pt", trained_like_model, {})
    assert not (tmp_path / "diverged.pt").exists() and not list(tmp_path.glob("*.tmp"))


@pytest.mark.parametrize("saved, under", [
    (dict(dim=3), dict(dim=2)), (dict(dim=2), dict(dim=3)), (dict(dim=2, components=2), dict(dim=2)),
    (dict(dim=2), dict(dim=2, components=2)), (dict(dim=2, n_digits=2), dict(dim=2)),
])
def test_load_checkpoint_refuses_weights_of_another_network_under_a_model_name(tmp_path, saved, under):
    """Requirement: D = 3 weights saved under a D = 2 name (any such mismatch) are refused by `load_checkpoint`
    itself, naming both networks, not only by `load_or_train`."""
    spec = Spec(kind="hib", n_digits=1, preset="fast", **under)
    model = build_model("hib", **{"n_digits": 1, **saved})
    p = save_checkpoint(tmp_path / f"{spec.name}.pt", model, {"name": spec.name, "spec": asdict(spec)})
    with pytest.raises(CheckpointError, match=rf"does not match '{re.escape(spec.name)}' \(D={spec.dim}, "
                                              rf"C={spec.components}\).*expected"):
        load_checkpoint(p)


def test_the_store_reads_the_recorded_spec_and_never_parses_a_name(sandbox):
    """A checkpoint is checked against the spec it records whole; a spec recorded under another model's name is
    refused naming both; one that records no zoo spec (none, an unknown kind, a spec that does not build) is a
    plain checkpoint. Names are never read back (hedgekit.zoo has no name parser): models train, save, load and
    refresh by the spec they record."""
    spec = Spec(kind="hib", n_digits=1, dim=2, preset="fast", seed=21)
    _, meta = load_or_train(spec, progress=False)
    assert meta["spec"] == asdict(spec) and load_or_train(spec, progress=False)[1]["source"] == "cache"
    assert store.refresh_metrics(meta["path"]).keys() == meta["metrics"].keys()
    model = spec.build()
    other = Spec(kind="hib", n_digits=1, dim=2, preset="fast", seed=22)
    p = save_checkpoint(sandbox["root"] / "x.pt", model, {"name": spec.name, "spec": asdict(other)})
    with pytest.raises(CheckpointError, match=rf"records the spec of '{other.name}' under the name '{spec.name}'"):
        load_checkpoint(p)
    for recorded in ({}, {"kind": "nosuch"}, {"kind": "hib", "dim": 0}):
        p = save_checkpoint(sandbox["root"] / "x.pt", model, {"name": spec.name, "spec": recorded})
        assert load_checkpoint(p)[1]["spec"] == recorded


def test_legacy_v1_checkpoints_still_load_with_their_weights_hash(tmp_path, trained_like_model):
    p = _save(tmp_path, trained_like_model)
    _rewrite(p, lambda pl: pl.update(format=store._LEGACY_FORMAT, sha256=store._state_hash(pl["state_dict"])))
    load_checkpoint(p)
    _rewrite(p, lambda pl: pl["state_dict"]["match.b"].add_(1.0))
    with pytest.raises(CheckpointError, match="weights do not match their recorded SHA-256"):
        load_checkpoint(p)


def test_shipped_checkpoints_hash_their_metadata():
    for name in zoo.shipped_names():
        assert torch.load(store.SHIPPED_DIR / f"{name}.pt", weights_only=True)["format"] == zoo.FORMAT, name


def test_checkpoint_path_that_is_a_directory_is_a_clear_error(tmp_path, trained_like_model):
    (tmp_path / "m.pt").mkdir()
    with pytest.raises(InputError, match="m.pt: it is a directory"):
        save_checkpoint(tmp_path / "m.pt", trained_like_model, {})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.pt"]


def test_a_checkpoint_records_its_device_which_never_makes_it_stale(sandbox, monkeypatch):
    """meta["device"] says where the model trained (like precision, how, not what): a checkpoint trained on
    another device, or shipped before the field existed, serves its name without retraining."""
    devices = []
    real_fit = recipes.fit
    monkeypatch.setattr(recipes, "fit", lambda *a, **kw: devices.append(kw["device"]) or real_fit(*a, **kw))
    spec = Spec(kind="hib", n_digits=1, dim=2, preset="fast", seed=11)
    _, meta = load_or_train(spec, progress=False, device="auto")
    assert devices == [str(resolve_device("auto"))]  # "auto" reaches the trainer resolved
    path = zoo.find_checkpoint(spec)
    model, saved = zoo.load_checkpoint(path)
    assert meta["device"] == saved["device"] == device_description(devices[0])
    assert saved.get("processor") == (store.processor_name() if devices[0] == "cpu" else None)
    for recorded in ("cuda:0 (NVIDIA H100 80GB HBM3)", None):  # another device; a checkpoint without the field
        edited = dict(saved, device=recorded) if recorded else {k: v for k, v in saved.items() if k != "device"}
        save_checkpoint(path, model, edited)
        assert not zoo.is_stale(path, spec) and zoo.find_checkpoint(spec) == path
        _, loaded = load_or_train(spec, progress=False, device="cpu")
        assert loaded["source"] == "cache" and loaded.get("device") == recorded
    assert len(devices) == 1  # trained once


def test_processor_name_is_the_model_name_line_else_what_python_knows(tmp_path, monkeypatch):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nmodel name\t: Test CPU\nflags\t\t: fpu avx2\n"
                    "processor\t: 1\nmodel name\t: Test CPU\n")
    assert store.processor_name(info) == "Test CPU"
    monkeypatch.setattr(store.platform, "processor", lambda: "")
    monkeypatch.setattr(store.platform, "machine", lambda: "riscv64")
    info.write_text("processor\t: 0\nFeatures\t: fp asimd\n")  # no model name line (as on some ARM CPUs)
    assert store.processor_name(info) == store.processor_name(tmp_path / "absent") == "riscv64"
    monkeypatch.setattr(store.platform, "machine", lambda: "")
    assert store.processor_name(tmp_path / "absent") == "unknown"


def test_a_checkpoint_trained_on_the_cpu_records_its_processor(monkeypatch):
    monkeypatch.setattr(store, "processor_name", lambda: "Test CPU")
    assert store.trained_on("cpu") == {"device": "cpu", "processor": "Test CPU"}
    assert store.trained_on("meta") == {"device": "meta"}  # another device: no processor


def test_a_device_that_is_not_here_is_refused_before_training(sandbox, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    spec = Spec(kind="point", n_digits=1, dim=2, preset="fast", seed=12)
    for device, match in (("cuda", "CUDA is not available"), ("gpu", "not a device"), ("xla", "not supported")):
        with pytest.raises(InputError, match=match):
            load_or_train(spec, progress=False, device=device)
    assert not sandbox["fits"] and zoo.find_checkpoint(spec) is None


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_a_model_trained_on_cuda_records_the_card(sandbox):
    spec = Spec(kind="hib", n_digits=1, dim=2, preset="fast", seed=13)
    model, meta = load_or_train(spec, progress=False, device="cuda")
    assert meta["device"].startswith("cuda:") and torch.cuda.get_device_name() in meta["device"]
    assert next(model.parameters()).is_cuda and meta["train_config"]["steps"] == 25
    assert zoo.load_checkpoint(zoo.find_checkpoint(spec))[1]["device"] == meta["device"]
