"""Tests of hedgekit.zoo: names, checkpoints, load-or-train for every kind of model.

Nothing here touches the user's cache: HEDGEKIT_DATA points to tmp_path, the shipped
checkpoint folder to an empty tmp folder, and N-digit MNIST is replaced by a tiny
synthetic NDigitSet (fixed random 28 x 28 "glyphs" per digit value + noise), so
load_or_train runs in seconds without building the 100k-image split."""
import copy
import math
import os
import pickle
import re
import numpy as np
import pytest
import torch
import hedgekit.zoo as zoo
from hedgekit.data import NDigitSet, occlude, sample_digit_boxes
from hedgekit.data.ndigit import spelled_number
from hedgekit.errors import CheckpointError, InputError
from hedgekit.methods.prototypes import PN, SPE
from hedgekit.nets import build_model
from hedgekit.zoo import Spec, load_checkpoint, load_or_train, save_checkpoint, spec_from_name
pytestmark = pytest.mark.filterwarnings("ignore:Converting a tensor with requires_grad=True to a scalar")
TINY = dict(steps=25, classes_per_batch=5, per_class=4, eval_images=100)


def _shrink(preset):
    """The "fast" preset with every steps / batch / eval-size entry made tiny, whatever its nesting."""
    if isinstance(preset, dict):
        return {k: TINY[k] if k in TINY else _shrink(v) for k, v in preset.items()}
    return preset


@pytest.fixture
def sandbox(tiny_ndigit, tmp_path, monkeypatch):
    """Private cache, no shipped checkpoints, tiny preset, tiny synthetic data, and a training counter."""
    monkeypatch.setenv("HEDGEKIT_DATA", str(tmp_path / "cache"))
    monkeypatch.setattr(zoo, "SHIPPED_DIR", tmp_path / "shipped")
    monkeypatch.setitem(zoo.PRESETS, "fast", _shrink(copy.deepcopy(zoo.PRESETS["fast"])))
    sets = {split: tiny_ndigit(1, split, 300 if split == "train" else 150)
            for split in ("train", "test_seen", "test_unseen")}
    loads = []

    def fake_load_ndigit(n_digits, split, seed=0, mnist_root=None):
        assert n_digits == 1
        loads.append(split)
        return sets[split]

    monkeypatch.setattr(zoo, "load_ndigit", fake_load_ndigit)
    fits = []
    real_fit = zoo.fit

    def counting_fit(*args, **kwargs):
        fits.append(args[3])  # the TrainConfig
        return real_fit(*args, **kwargs)

    monkeypatch.setattr(zoo, "fit", counting_fit)
    return dict(root=tmp_path, fits=fits, loads=loads, sets=sets)


def _same_metrics(m1: dict, m2: dict) -> bool:
    return m1.keys() == m2.keys() and all(
        (math.isnan(m1[k]) and math.isnan(m2[k])) or m1[k] == m2[k] for k in m1)


def _outputs(model, x):
    with torch.no_grad():
        e = model.eval()(x)
    return e.mean, e.var, model.match.a.detach(), model.match.b.detach()


# --------------------------------------------------------------------------- names
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
    back = spec_from_name(name)
    assert back == spec and back.name == name


def _every_experiment_spec() -> list:
    """Every spec the papers' notebooks use (papers/*/experiments.py), FAST and full."""
    from hedgekit.papers import hib, spe, taha
    from hedgekit.repro.reproduce import NOTEBOOKS

    notebooks = [nb for group in NOTEBOOKS.values() for nb in group]
    specs = [s for paper in (hib, spe, taha) for nb in notebooks for fast in (True, False)
             for s in paper.experiments.notebook_specs(nb, fast)]
    return specs + hib.experiments.all_specs(True) + hib.experiments.all_specs(False)


def test_every_shipped_checkpoint_and_experiment_spec_round_trips_through_its_name():
    """``spec_from_name(spec.name) == spec`` for every shipped checkpoint and every spec of every notebook."""
    shipped = zoo.shipped_names()
    assert len(shipped) >= 12  # hedgekit/checkpoints/ ships point, hib, pn and spe models
    for name in shipped:
        spec = spec_from_name(name)
        assert spec.name == name and spec_from_name(spec.name) == spec
        assert zoo.find_checkpoint(spec) == zoo.SHIPPED_DIR / f"{name}.pt"
    specs = _every_experiment_spec()
    assert {s.kind for s in specs} == set(zoo.KINDS) and len(specs) > 100
    for spec in specs:
        back = spec_from_name(spec.name)
        assert back == spec and type(back) is type(spec) is zoo.SPEC_TYPES[spec.kind]


def test_each_kind_has_its_own_spec_type_with_only_its_fields():
    from dataclasses import fields

    own = {kind: {f.name for f in fields(cls)} - {"kind", "data", "n_digits", "dim", "preset", "seed", "steps"}
           for kind, cls in zoo.SPEC_TYPES.items()}
    assert own == {"point": {"loss", "margin"}, "hib": {"components", "beta", "samples"}, "pn": {"recipe"},
                   "spe": {"recipe", "sampler", "samples", "init_var"}, "triplet": {"recipe"}, "het": {"recipe"}}
    assert type(Spec(kind="hib", components=2)) is zoo.HIBSpec and Spec(kind="spe").family == "episodes"
    assert Spec(kind="point").components == 1 == Spec(kind="het").components  # read by every net config
    with pytest.raises(InputError, match="HIBSpec names hib models"):
        zoo.HIBSpec(kind="spe")
    with pytest.raises(InputError, match="SPESpec needs samples per query"):
        zoo.SPESpec()  # the data set's default is filled by Spec(...)
    with pytest.raises(InputError, match="write samples=None"):
        zoo.HIBSpec(samples=Spec().preset_k)  # the preset's own K has one spelling
    with pytest.raises(AttributeError):
        Spec(kind="pn").beta  # noqa: B018 (PN has no KL weight)


def test_hib_samples_are_k_of_eq5_defaulting_to_the_presets_and_named_only_when_they_differ():
    from hedgekit.training.fit import TrainConfig
    from hedgekit.zoo import PRESETS

    paper_k = PRESETS["paper"]["hib"]["k"]
    assert Spec(samples=paper_k) == Spec() and Spec().samples is None  # one model, one name
    assert Spec().train_config().k == paper_k and Spec(samples=8).train_config().k == 8
    assert Spec(preset="fast").train_config().k == TrainConfig.k  # the fast preset names no K: the trainer's
    assert Spec(samples=TrainConfig.k, preset="fast") == Spec(preset="fast")
    with pytest.raises(InputError, match="Spec.samples does not apply to point models"):
        Spec(kind="point", samples=8)  # K means nothing for point models: refused, not ignored
    for bad in (0, -1, 2.0, True, "8"):
        with pytest.raises(InputError, match="samples per input"):
            Spec(samples=bad)


def test_at_preset_keeps_an_own_k_and_lets_the_presets_k_follow_the_preset():
    assert Spec().at_preset("fast") == Spec(preset="fast")
    assert Spec(samples=8, dim=3).at_preset("fast").name == "hib-n2-d3-c1-beta0.0001-fast-s0"  # fast's K is 8
    assert Spec(samples=2).at_preset("fast", steps=30).name == "hib-n2-d2-c1-beta0.0001-k2-fast30-s0"
    assert Spec(kind="spe", samples=9).at_preset("fast").samples == 9
    assert Spec(kind="point", steps=100).at_preset("fast") == Spec(kind="point", preset="fast")


def test_labels():
    assert Spec(kind="point").label == "point"
    assert Spec(components=2).label == "MoG-2"


@pytest.mark.parametrize(
    "name, match",
    [
        ("hib", "is not a hedgekit model name"),
        ("hib-nX-d2-c1-beta0.0001-paper-s0", "is not a hedgekit model name"),
        ("hib-n2-d2-c1-beta0.0001-paper", "is not a hedgekit model name"),
        ("hib-n2-d2-c1-beta0.00010-paper-s0", "not a canonical model name"),
        ("hib-n2-d2-c1-beta0.0001-imagenet-s0", "unknown preset"),
        ("point-n2-d2-hard-m-paper-s0", "is not a hedgekit model name"),
    ],
)
def test_spec_from_name_errors(name, match):
    with pytest.raises(InputError, match=match):
        spec_from_name(name)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(preset="slow"), "unknown preset"),
        (dict(kind="point", components=2), "does not apply to point models .*one component"),
        (dict(kind="hib", loss="hard"), "Spec.loss does not apply to hib models .*contrastive loss is for point"),
        (dict(kind="point", margin=0.5), "with loss='soft' leave it out"),
    ],
)
def test_model_spec_validation(kwargs, match):
    with pytest.raises(InputError, match=match):
        Spec(**kwargs)


def test_train_config_from_spec():
    cfg = Spec(kind="point", preset="fast", steps=10).train_config()
    assert cfg.steps == 10 and cfg.beta == 0.0 and cfg.loss == "soft"
    cfg = Spec(beta=1e-6, steps=77).train_config()
    assert cfg.beta == 1e-6 and cfg.steps == 77 and cfg.loss == "soft"
    cfg = Spec(kind="point", loss="hard", margin=0.7).train_config()
    assert cfg.loss == "hard" and cfg.margin == 0.7 and cfg.beta == 0.0
    m = Spec(n_digits=3, dim=3, components=2).build()
    assert m.config["width"] == 84 and m.config["components"] == 2


# --------------------------------------------------------------------------- checkpoints
@pytest.fixture
def trained_like_model():
    torch.manual_seed(0)
    model = build_model("hib", n_digits=1, dim=3, components=2)
    with torch.no_grad():  # move every weight away from its initial value
        for p in model.parameters():
            p.add_(0.01 * torch.randn_like(p))
    return model


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
    payload["sha256"] = zoo._payload_hash(payload)  # a consistent file whose config does not fit its weights
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


# --------------------------------------------------------------------------- load or train
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
    assert not (zoo.PACKAGE_DIR.parent / "data" / "checkpoints" / f"{spec.name}.pt").exists()


def test_load_or_train_save_false_and_shipped_first(sandbox, trained_like_model):
    spec = Spec(kind="point", n_digits=1, dim=2, preset="fast", seed=1)
    load_or_train(spec, progress=False, save=False)
    assert not (sandbox["root"] / "cache" / "checkpoints" / f"{spec.name}.pt").exists()
    assert len(sandbox["fits"]) == 1
    # a shipped checkpoint with the name wins over training
    shipped = build_model("point", n_digits=1, dim=2)
    save_checkpoint(zoo.SHIPPED_DIR / f"{spec.name}.pt", shipped, {"name": spec.name, "metrics": {"from": 1.0}})
    model, meta = load_or_train(spec, progress=False)
    assert meta["metrics"] == {"from": 1.0} and len(sandbox["fits"]) == 1 and meta["source"] == "shipped"


def test_a_checkpoint_saved_for_another_spec_is_refused(sandbox):
    """Requirement: a D = 3 checkpoint under a D = 2 name (or any other mismatch) is refused, naming it."""
    spec = Spec(kind="hib", n_digits=1, dim=2, preset="fast", seed=7)
    path = zoo.SHIPPED_DIR / f"{spec.name}.pt"
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


def test_paper_preset_recipes():
    hib, point = Spec(kind="hib").train_config(), Spec(kind="point").train_config()
    assert (hib.steps, hib.k, hib.beta) == (9000, 4, 1e-4)  # K = 4 affords 9,000 steps (zoo.PRESETS comment)
    assert (point.steps, point.beta) == (12000, 0.0)
    assert Spec(kind="hib", steps=100).train_config().k == 4  # a steps override keeps the preset's K
    assert Spec(kind="hib", preset="fast").train_config().k == 8


def test_load_or_train_corrupt_cache_raises(sandbox):
    spec = Spec(kind="hib", n_digits=1, dim=2, preset="fast", seed=2)
    path = zoo.cache_path("checkpoints", f"{spec.name}.pt")
    path.parent.mkdir(parents=True)  # cache_path creates nothing (a read needs no write access)
    path.write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="delete it to retrain"):
        load_or_train(spec, progress=False)
    assert sandbox["fits"] == []


# --------------------------------------------------------------------------- prototype models (PN, SPE)
@pytest.mark.parametrize("spec", [
    Spec(),
    Spec(kind="pn", data="ndigit", n_digits=3, dim=3, preset="fast", seed=2),
    Spec(kind="spe", data="lshapes", dim=2, preset="fast"),
    Spec(kind="spe", data="ndigit", n_digits=2, dim=2, sampler="naive", samples=27, recipe="fig4", preset="paper", seed=1),
    Spec(kind="spe", data="lshapes", dim=3, preset="paper", steps=400),
    Spec(kind="spe", n_digits=3, dim=3, steps=12000, init_var="eps"),
])
def test_prototype_name_round_trip(spec):
    again = zoo.spec_from_name(spec.name)
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


@pytest.mark.parametrize("name, match", [
    ("spe-n2-d2-paper-s0", "model name"), ("spe-x2-d2-intersection1-paper-s0", "model name"),
    ("spe-n2-d2-intersection1-paper", "model name"), ("spe-n2-d2-intersection1-nosuch-s0", "unknown preset"),
    ("pn-n2-d2-paper-s0-x", "model name"), ("spe-n2-d2-intersection01-paper-s0", "canonical"),
    ("spe-n2-d2-gibbs1-paper-s0", "sampler"), ("nosuch-n2-d2-paper-s0", "kind")])
def test_prototype_bad_names_raise(name, match):
    with pytest.raises(InputError, match=match):
        zoo.spec_from_name(name)


def test_spe_variances_start_at_sigma_eps2_with_init_var_eps():
    """App. B: sigma_eps^2 = softplus(|S| gamma0^(2/d)), |S| = 32 x 5 support images of the paper preset's episodes."""
    import math

    import torch.nn.functional as F

    from hedgekit.nets import INIT_VAR

    spec = Spec(kind="spe", n_digits=3, dim=3, steps=12000, init_var="eps")
    assert spec.name == "spe-n3-d3-intersection1-veps-paper12000-s0"
    want = math.log1p(math.exp(160 * 0.01 ** (2 / 3)))  # 7.43
    assert spec.initial_variance == pytest.approx(want) and want == pytest.approx(7.427, abs=1e-3)
    assert Spec(kind="spe", init_var="eps").initial_variance == pytest.approx(math.log1p(math.exp(160 * 0.01)))
    assert spec.initial_variance == pytest.approx(float(spec.build_head().sigma_eps2))  # the head's own start
    model = spec.build()
    assert model.config["init_var"] == spec.initial_variance == spec.net_config()["init_var"]
    assert F.softplus(model.head.branches[0].bias[3:]).tolist() == pytest.approx([want] * 3, rel=1e-5)
    unit = Spec(kind="spe", n_digits=3, dim=3, steps=12000)
    assert unit.initial_variance == INIT_VAR and unit.build().config["init_var"] == INIT_VAR
    assert unit.name == "spe-n3-d3-intersection1-paper12000-s0"  # the default keeps every existing name
    for kind in ("pn", "hib", "point", "het"):
        with pytest.raises(InputError, match="init_var='eps'"):
            Spec(kind=kind, init_var="eps")
    with pytest.raises(InputError, match="init_var must be one of"):
        Spec(kind="spe", init_var="tiny")
    with pytest.raises(InputError, match="canonical|model name"):
        zoo.spec_from_name("spe-n2-d2-veps-intersection1-paper-s0")


def test_prototype_bad_specs_raise():
    with pytest.raises(InputError, match="kind"):
        Spec(kind="nosuch")
    with pytest.raises(InputError, match="Figure 4"):
        Spec(kind="spe", data="lshapes", recipe="fig4")
    with pytest.raises(InputError, match="preset"):
        Spec(preset="huge")
    with pytest.raises(InputError, match="sampler"):
        Spec(kind="spe", sampler="gibbs")
    with pytest.raises(InputError, match="samples"):
        Spec(kind="spe", samples=0)
    with pytest.raises(InputError, match="N-digit MNIST"):
        Spec(kind="hib", data="lshapes")
    with pytest.raises(InputError, match="one component"):
        Spec(kind="spe", components=2)
    for field, value in (("dim", 0), ("n_digits", 1.5), ("seed", -1), ("steps", 0), ("components", True)):
        with pytest.raises(InputError, match=f"Spec.{field} must be an integer"):
            Spec(**{field: value})
    for kind, field, value in (("hib", "beta", float("inf")), ("hib", "beta", -1e-4), ("point", "margin", 0.0),
                               ("point", "loss", "vib")):
        with pytest.raises(InputError, match=f"Spec.{field} must be"):
            Spec(kind=kind, **{field: value})


def test_specs_build_the_papers_networks_and_heads():
    spe = Spec(kind="spe", data="ndigit", n_digits=2, dim=3, preset="fast")
    model, head = spe.build(), spe.build_head()
    assert model.config["kind"] == "hib" and model.config["dim"] == 3 and model.config["width"] == 56
    assert model.config["init_var"] == 1.0  # INIT_VAR: variances start near sigma_eps^2
    cfg = spe.train_config()
    # App. B: gamma = |S| gamma0^(2/d) with |S| the support examples of a training episode
    assert float(head.gamma) == pytest.approx(cfg.n_classes * cfg.k_support * 0.01 ** (2 / 3))
    assert (head.train_sampler, head.train_samples, head.eval_sampler, head.eval_samples) == ("intersection", 1, "naive", 200)
    ls = Spec(kind="spe", data="lshapes", preset="paper")
    assert ls.build().config["channels"] == 64 and ls.train_config().n_classes == 4  # App. A.2
    assert ls.train_config().k_support == 2 and ls.build_head().train_samples == 8
    assert isinstance(Spec(kind="pn").build_head(), PN) and Spec(kind="pn").build().config["kind"] == "point"


# --------------------------------------------------------------------------- load or train
def tiny_one_digit(split: str, n_images: int, seed: int = 0) -> NDigitSet:
    """1-digit "MNIST": digit v is a fixed random glyph + noise (easy, separable); test sets fully occluded."""
    glyphs = (np.random.default_rng(1234).random((10, 28, 28)) > 0.75) * 200.0
    rng = np.random.default_rng([seed, len(split)])
    labels = rng.permutation(np.arange(n_images) % 10).astype(np.int64)
    digits = labels[:, None]
    img = np.clip(glyphs[labels] + rng.normal(0, 30, (n_images, 28, 28)), 0, 255).astype(np.uint8)
    boxes = sample_digit_boxes(rng, n_images, 1, 0.2 if split == "train" else 1.0)
    assert np.array_equal(spelled_number(digits), labels)
    return NDigitSet(img, occlude(img, boxes), labels, digits, boxes, 1, split)


@pytest.fixture
def proto_sandbox(tmp_path, monkeypatch):
    monkeypatch.setenv("HEDGEKIT_DATA", str(tmp_path / "cache"))
    monkeypatch.setattr(zoo, "SHIPPED_DIR", tmp_path / "shipped")
    tiny = copy.deepcopy(zoo.PRESETS["fast"])
    tiny["lshapes"].update(steps=3, channels=4, n_train=24, n_test=24, eval_episodes=2, k_support=2,
                           query_per_class=2, eval_query=2)
    tiny["ndigit"].update(steps=4, n_classes=4, k_support=2, query_per_class=2, eval_episodes=2, eval_k=2)
    monkeypatch.setitem(zoo.PRESETS, "fast", tiny)
    sets = {"train": tiny_one_digit("train", 200), "test_seen": tiny_one_digit("test_seen", 100)}
    monkeypatch.setattr(zoo, "load_ndigit", lambda n, split, seed=0: sets[split])
    fits = []
    real_fit = zoo.fit_episodic

    def counting_fit(*args, **kwargs):
        fits.append(args[4])  # the EpisodicConfig
        return real_fit(*args, **kwargs)

    monkeypatch.setattr(zoo, "fit_episodic", counting_fit)
    return fits


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


def test_training_is_deterministic_for_a_name(proto_sandbox):
    """Same spec, same seed -> bit-identical weights and sigma_eps^2 (the initial weights are seeded too)."""
    spec = Spec(kind="spe", data="ndigit", n_digits=1, preset="fast")
    (m1, meta1), (m2, meta2) = zoo.train_spec(spec, progress=False), zoo.train_spec(spec, progress=False)
    h1, h2 = zoo.prototype_head(meta1), zoo.prototype_head(meta2)
    assert all(torch.equal(a, b) for a, b in zip(m1.state_dict().values(), m2.state_dict().values()))
    assert torch.equal(h1.gamma, h2.gamma)
    m3, _ = zoo.train_spec(Spec(kind="spe", data="ndigit", n_digits=1, preset="fast", seed=1), progress=False)
    assert not torch.equal(m1.state_dict()["head.branches.0.weight"], m3.state_dict()["head.branches.0.weight"])


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


# --------------------------------------------------------------------------- triplet models (Taha et al.)
@pytest.mark.parametrize("spec", [
    Spec(kind="het", dim=8, recipe="aug"), Spec(kind="triplet", dim=8, preset="fast", seed=3),
    Spec(kind="het", data="fashion", dim=8, recipe="noisy"), Spec(kind="triplet", data="fashion", dim=4, recipe="clean"),
    Spec(kind="het", data="fashion", dim=8, recipe="longtail", steps=99)])
def test_triplet_name_round_trip(spec):
    assert zoo.spec_from_name(spec.name) == spec and spec.family == "triplets"


def test_triplet_specs_and_configs():
    het = Spec(kind="het", data="fashion", dim=8, recipe="noisy")
    assert het.name == "het-fashion-d8-noisy-paper-s0" and het.n_digits == 1 and het.label == "triplet + hetero"
    cfg = het.train_config()
    assert cfg.heteroscedastic and cfg.mining == "semi_hard" and (cfg.P, cfg.K) == (10, 10) and cfg.occlusion_p == 0
    duke = Spec(kind="triplet", dim=8, recipe="aug").train_config()
    assert not duke.heteroscedastic and (duke.P, duke.K) == (18, 4) and duke.occlusion_p == 0.2  # sec. 5.1
    assert Spec(kind="triplet", dim=8).train_config().occlusion_p == 0.0
    assert het.net_config()["kind"] == "het" and het.net_config()["width"] == 28
    for bad, match in ((dict(kind="het", recipe="noisy"), "recipes"),
                       (dict(kind="het", data="lshapes"), "het models train on N-digit MNIST or Fashion-MNIST"),
                       (dict(kind="het", data="fashion", n_digits=3), "n_digits applies to N-digit MNIST only"),
                       (dict(kind="hib", data="fashion"), "hib models train on N-digit MNIST"),
                       (dict(kind="spe", recipe="aug"), "main \\(or fig4\\) recipe")):
        with pytest.raises(InputError, match=match):
            Spec(**bad)


def test_triplet_data_noisy_and_clean_fashion(monkeypatch):
    """The noisy recipe keeps the verified-clean subset's labels, flips ~38% of all labels between look-alikes,
    and records the truth; the clean recipe is exactly the clean subset."""
    from types import SimpleNamespace

    import hedgekit.data.fashion as fashion

    rng = np.random.default_rng(0)
    fake = SimpleNamespace(images=rng.integers(0, 255, (4000, 28, 28), dtype=np.uint8), labels=np.arange(4000) % 10)
    monkeypatch.setattr(fashion, "load_fashion", lambda split="train": fake)
    noisy = zoo.triplet_data(Spec(kind="het", data="fashion", dim=8, recipe="noisy"))
    assert noisy["flipped"].mean() == pytest.approx(0.95 * 0.38, abs=0.03)
    assert not noisy["flipped"][noisy["clean"]].any() and noisy["clean"].mean() == pytest.approx(0.05)
    assert np.array_equal(noisy["labels"] != noisy["true"], noisy["flipped"])
    assert set(np.unique(noisy["labels"][noisy["flipped"] & (noisy["true"] == 1)])) == set()  # trousers never flip
    clean = zoo.triplet_data(Spec(kind="het", data="fashion", dim=8, recipe="clean"))
    assert len(clean["labels"]) == noisy["clean"].sum() and not clean["flipped"].any()


def test_triplet_model_trains_once_then_loads(sandbox, monkeypatch):
    spec = Spec(kind="het", n_digits=1, dim=4, preset="fast", seed=2)
    monkeypatch.setitem(zoo.PRESETS["fast"], "triplets_ndigit",
                        dict(steps=6, P=4, K=3, lr=1e-3, mining="batch_hard", eval_images=100))
    model, meta = load_or_train(spec, progress=False)
    assert meta["source"] == "trained now" and 0 <= meta["metrics"]["map"] <= 1
    assert meta["train_config"]["heteroscedastic"] and meta["train_config"]["steps"] == 6
    again, meta2 = load_or_train(spec, progress=False)
    assert meta2["source"] == "cache"
    x = torch.rand(3, 1, 28, 28)
    torch.testing.assert_close(model.embed(x).var, again.embed(x).var)


# --------------------------------------------------------------------------- hardening (issue 14)
def _rewrite(path, edit, rehash=False):
    """Load a checkpoint's payload, apply ``edit(payload)``, save it back (with a fresh hash if ``rehash``)."""
    payload = torch.load(path, weights_only=True)
    edit(payload)
    if rehash:
        payload["sha256"] = zoo._payload_hash(payload)
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
    p = save_checkpoint(tmp_path / f"{spec.name}.pt", model, {"name": spec.name})
    with pytest.raises(CheckpointError, match=rf"does not match '{re.escape(spec.name)}' \(D={spec.dim}, "
                                              rf"C={spec.components}\).*expected"):
        load_checkpoint(p)


def test_legacy_v1_checkpoints_still_load_with_their_weights_hash(tmp_path, trained_like_model):
    p = _save(tmp_path, trained_like_model)
    _rewrite(p, lambda pl: pl.update(format=zoo._LEGACY_FORMAT, sha256=zoo._state_hash(pl["state_dict"])))
    load_checkpoint(p)
    _rewrite(p, lambda pl: pl["state_dict"]["match.b"].add_(1.0))
    with pytest.raises(CheckpointError, match="weights do not match their recorded SHA-256"):
        load_checkpoint(p)


def test_shipped_checkpoints_hash_their_metadata():
    for name in zoo.shipped_names():
        assert torch.load(zoo.SHIPPED_DIR / f"{name}.pt", weights_only=True)["format"] == zoo.FORMAT, name


def test_checkpoint_path_that_is_a_directory_is_a_clear_error(tmp_path, trained_like_model):
    (tmp_path / "m.pt").mkdir()
    with pytest.raises(InputError, match="m.pt: it is a directory"):
        save_checkpoint(tmp_path / "m.pt", trained_like_model, {})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.pt"]


def test_training_a_zoo_model_shows_progress_for_training_and_evaluation(sandbox, capsys):
    """Issue 14: notebooks training FAST models must show a sign of life: a tqdm bar for the steps, then one for
    the Table 1 evaluation (about a third of a FAST model's time); nothing with progress=False."""
    spec = Spec(kind="hib", n_digits=1, dim=2, preset="fast", seed=3)
    load_or_train(spec, progress=True, save=False)
    err = capsys.readouterr().err
    assert "train hib" in err and re.search(r"evaluate \(\d+ images\): embed", err) and "KNN corrupt" in err
    load_or_train(spec, progress=False, save=False)
    assert capsys.readouterr().err == ""


# --------------------------------------------------------------------------- device
def test_a_checkpoint_records_its_device_which_never_makes_it_stale(sandbox, monkeypatch):
    """meta["device"] says where the model trained (like precision, how, not what): a checkpoint trained on
    another device, or shipped before the field existed, serves its name without retraining."""
    devices = []
    real_fit = zoo.fit
    monkeypatch.setattr(zoo, "fit", lambda *a, **kw: devices.append(kw["device"]) or real_fit(*a, **kw))
    spec = Spec(kind="hib", n_digits=1, dim=2, preset="fast", seed=11)
    _, meta = load_or_train(spec, progress=False, device="auto")
    assert devices == [str(zoo.resolve_device("auto"))]  # "auto" reaches the trainer resolved
    path = zoo.find_checkpoint(spec)
    model, saved = zoo.load_checkpoint(path)
    assert meta["device"] == saved["device"] == zoo.device_description(devices[0])
    for recorded in ("cuda:0 (NVIDIA H100 80GB HBM3)", None):  # another device; a checkpoint without the field
        edited = dict(saved, device=recorded) if recorded else {k: v for k, v in saved.items() if k != "device"}
        save_checkpoint(path, model, edited)
        assert not zoo.is_stale(path, spec) and zoo.find_checkpoint(spec) == path
        _, loaded = load_or_train(spec, progress=False, device="cpu")
        assert loaded["source"] == "cache" and loaded.get("device") == recorded
    assert len(devices) == 1  # trained once


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


# ------------------------------------------------------------------ URL runs (hedgekit.papers.url.benchmark)
@pytest.fixture
def url_defined():
    """The URL benchmark, which defines URL runs (`zoo.register_url_benchmark`) when it is imported."""
    from hedgekit.papers.url import benchmark

    return benchmark


@pytest.mark.parametrize("method,budget,seed,name", [
    ("ce", "paper", 0, "url-ce-paper-s0"),
    ("infonce_2v", "converged-lr0.5x", 2, "url-infonce_2v-converged-lr0.5x-s2"),
    ("mcinfonce_2v", "converged-lr2x", 17, "url-mcinfonce_2v-converged-lr2x-s17"),
])
def test_url_run_names_round_trip(url_defined, method, budget, seed, name):
    spec = zoo.URLSpec(method, budget, seed)
    assert spec.name == name and spec_from_name(name) == spec and type(spec_from_name(name)) is zoo.URLSpec
    assert Spec(kind="url", method=method, budget=budget, seed=seed) == spec
    assert spec.kind == spec.family == "url" and "url" not in zoo.KINDS  # KINDS: the EmbeddingNet models


@pytest.mark.parametrize("name,match", [
    ("url-nope-paper-s0", "unknown method"),
    ("url-ce-huge-s0", "budget must be one of"),
    ("url-ce-converged-lr0x-s0", "budget must be one of"),  # a sweep factor must be > 0
    ("url-ce-converged-lrx-s0", "budget must be one of"),
    ("url-ce-paper", "not a URL run name"),
    ("url-ce-s0", "not a URL run name"),
    ("url-ce-paper-s01", "did you mean 'url-ce-paper-s1'"),
    ("url-ce-converged-lr0.50x-s0", "budget must be one of"),  # one budget, one name: converged-lr0.5x
])
def test_url_run_bad_names_raise(url_defined, name, match):
    with pytest.raises(InputError, match=match):
        spec_from_name(name)


@pytest.fixture
def url_store(url_defined, tmp_path, monkeypatch):
    """URL runs in tmp_path (`benchmark.cache_root`), 70 classes without loading MNIST, and a trainer that fails:
    a test that needs training sets its own."""
    benchmark = url_defined

    monkeypatch.setattr(benchmark, "cache_root", lambda: tmp_path / "url")
    monkeypatch.setattr(benchmark, "_train_data", lambda: (None, None, np.arange(70)))

    def no_training(*args, **kwargs):
        raise AssertionError("a cached URL run was retrained")

    monkeypatch.setattr(benchmark, "train_run", no_training)
    return benchmark


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
    rec = {"method": method, "seed": seed, "budget": budget, "config": benchmark._config(b, method),
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
    real = benchmark._source_text
    with monkeypatch.context() as m:  # code the run executes is edited: the upstream trainer
        m.setattr(benchmark, "_source_text", lambda path: real(path) + ("\n# edited" if path.endswith(
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

    monkeypatch.setattr(benchmark, "train_run", fake_train)
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
