"""Tests of hedgekit.zoo (names, checkpoints, load-or-train) and hedgekit.evaluation (KNN, Table 1).

Nothing here touches the user's cache: HEDGEKIT_DATA points to tmp_path, the shipped
checkpoint folder to an empty tmp folder, and N-digit MNIST is replaced by a tiny
synthetic NDigitSet (fixed random 28 x 28 "glyphs" per digit value + noise), so
load_or_train runs in seconds without building the 100k-image split.
"""
import copy
import math
import os
import pickle

import numpy as np
import pytest
import torch
from scipy import stats
from sklearn.metrics import average_precision_score

import hedgekit.zoo as zoo
from hedgekit import metrics as M
from hedgekit.data import NDigitSet, occlude, sample_digit_boxes
from hedgekit.data.ndigit import spelled_number
from hedgekit.distributions import Embedding
from hedgekit.errors import CheckpointError, InputError
from hedgekit.evaluation import EmbeddedSet, embed_set, knn, table1_metrics, verification
from hedgekit.models import SoftMatch, build_model
from hedgekit.uncertainty import self_mismatch
from hedgekit.zoo import ModelSpec, load_checkpoint, load_or_train, save_checkpoint, spec_from_name

pytestmark = pytest.mark.filterwarnings("ignore:Converting a tensor with requires_grad=True to a scalar")


# --------------------------------------------------------------------------- helpers
def tiny_ndigit(n_digits: int, split: str, n_images: int, classes=None, seed: int = 0) -> NDigitSet:
    """A small synthetic NDigitSet: digit value v is a fixed random glyph + noise; test splits fully occluded."""
    glyphs = (np.random.default_rng(1234).random((10, 28, 28)) > 0.75) * 200.0
    rng = np.random.default_rng([seed, n_digits, len(split)])
    classes = np.arange(10**n_digits) if classes is None else np.asarray(classes)
    labels = rng.permutation(classes[np.arange(n_images) % len(classes)]).astype(np.int64)
    digits = (labels[:, None] // 10 ** np.arange(n_digits - 1, -1, -1) % 10).astype(np.int64)
    img = glyphs[digits].transpose(0, 2, 1, 3).reshape(n_images, 28, 28 * n_digits)
    img = np.clip(img + rng.normal(0, 30, img.shape), 0, 255).astype(np.uint8)
    boxes = sample_digit_boxes(rng, n_images, n_digits, 0.2 if split == "train" else 1.0)
    assert np.array_equal(spelled_number(digits), labels)
    return NDigitSet(img, occlude(img, boxes), labels, digits, boxes, n_digits, split)


TINY = dict(steps=25, classes_per_batch=5, per_class=4, eval_images=100)


def _shrink(preset):
    """The "fast" preset with every steps / batch / eval-size entry made tiny, whatever its nesting."""
    if isinstance(preset, dict):
        return {k: TINY[k] if k in TINY else _shrink(v) for k, v in preset.items()}
    return preset


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    """Private cache, no shipped checkpoints, tiny preset, tiny synthetic data, and a training counter."""
    monkeypatch.setenv("HEDGEKIT_DATA", str(tmp_path / "cache"))
    monkeypatch.setattr(zoo, "SHIPPED_DIR", tmp_path / "shipped")
    monkeypatch.setitem(zoo.PRESETS, "fast", _shrink(copy.deepcopy(zoo.PRESETS["fast"])))
    sets = {"train": tiny_ndigit(1, "train", 300), "test_seen": tiny_ndigit(1, "test_seen", 150)}
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
        (ModelSpec(), "hib-n2-d2-c1-beta0.0001-paper-s0"),
        (ModelSpec(beta=1e-6), "hib-n2-d2-c1-beta1e_06-paper-s0"),
        (ModelSpec(beta=0.0, components=2, dim=3), "hib-n2-d3-c2-beta0-paper-s0"),
        (ModelSpec(kind="point", loss="contrastive", margin=1.0), "point-n2-d2-hard-m1-paper-s0"),
        (ModelSpec(kind="point", loss="contrastive", margin=0.5, n_digits=3, seed=12), "point-n3-d2-hard-m0.5-paper-s12"),
        (ModelSpec(kind="point", preset="fast"), "point-n2-d2-fast-s0"),
        (ModelSpec(n_digits=3, dim=4, components=2, beta=2.5e-5, preset="fast", steps=150, seed=7),
         "hib-n3-d4-c2-beta2.5e_05-fast150-s7"),
    ],
)
def test_name_round_trip(spec, name):
    assert spec.name == name
    back = spec_from_name(name)
    assert back == spec and back.name == name


def test_labels():
    assert ModelSpec(kind="point").label == "point"
    assert ModelSpec(components=2).label == "MoG-2"


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
        (dict(kind="point", components=2), "point models have one component"),
        (dict(kind="hib", loss="contrastive"), "hard contrastive loss"),
    ],
)
def test_model_spec_validation(kwargs, match):
    with pytest.raises(InputError, match=match):
        ModelSpec(**kwargs)


def test_train_config_from_spec():
    cfg = ModelSpec(kind="point", preset="fast", steps=10).train_config()
    assert cfg.steps == 10 and cfg.beta == 0.0 and cfg.loss == "vib"
    cfg = ModelSpec(beta=1e-6, steps=77).train_config()
    assert cfg.beta == 1e-6 and cfg.steps == 77 and cfg.loss == "vib"
    cfg = ModelSpec(kind="point", loss="contrastive", margin=0.7).train_config()
    assert cfg.loss == "contrastive" and cfg.margin == 0.7 and cfg.beta == 0.0
    m = ModelSpec(n_digits=3, dim=3, components=2).build()
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
    with pytest.raises(CheckpointError, match="is not a hedgekit-checkpoint-v1 file; delete it to retrain"):
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
    with pytest.raises(CheckpointError, match="(?s)weights do not match their recorded SHA-256.*delete it to retrain"):
        load_checkpoint(p)


@pytest.mark.parametrize("change", [dict(dim=5), dict(components=1), dict(kind="point", components=1), dict(depth=3)])
def test_config_mismatch(tmp_path, trained_like_model, change):
    p = _save(tmp_path, trained_like_model)
    payload = torch.load(p, weights_only=True)
    payload["config"].update(change)
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
    spec = ModelSpec(kind="hib", n_digits=1, dim=2, preset="fast", seed=0)
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
    spec = ModelSpec(kind="point", n_digits=1, dim=2, preset="fast", seed=1)
    load_or_train(spec, progress=False, save=False)
    assert not (sandbox["root"] / "cache" / "checkpoints" / f"{spec.name}.pt").exists()
    assert len(sandbox["fits"]) == 1
    # a shipped checkpoint with the name wins over training
    shipped = build_model("point", n_digits=1, dim=2)
    save_checkpoint(zoo.SHIPPED_DIR / f"{spec.name}.pt", shipped, {"metrics": {"from": 1.0}})
    model, meta = load_or_train(spec, progress=False)
    assert meta["metrics"] == {"from": 1.0} and len(sandbox["fits"]) == 1


def test_a_changed_preset_retrains_instead_of_reusing_stale_weights(sandbox, monkeypatch):
    spec = ModelSpec(kind="hib", n_digits=1, dim=2, preset="fast", seed=3)
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
    del meta["train_config"]["mean_warmup"]
    save_checkpoint(path, model, meta)
    assert not zoo.is_stale(path, spec)


def test_paper_preset_recipes():
    hib, point = ModelSpec(kind="hib").train_config(), ModelSpec(kind="point").train_config()
    assert (hib.steps, hib.k, hib.beta) == (9000, 4, 1e-4)  # K = 4 affords 9,000 steps (zoo.PRESETS comment)
    assert (point.steps, point.beta) == (12000, 0.0)
    assert ModelSpec(kind="hib", steps=100).train_config().k == 4  # a steps override keeps the preset's K
    assert ModelSpec(kind="hib", preset="fast").train_config().k == 8


def test_load_or_train_corrupt_cache_raises(sandbox):
    spec = ModelSpec(kind="hib", n_digits=1, dim=2, preset="fast", seed=2)
    path = zoo.cache_path("checkpoints", f"{spec.name}.pt")
    path.write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="delete it to retrain"):
        load_or_train(spec, progress=False)
    assert sandbox["fits"] == []


# --------------------------------------------------------------------------- evaluation: KNN
def _line_set(xs, labels, eta=None, corrupt_xs=None):
    """EmbeddedSet of point embeddings placed by hand at (x, 0)."""
    pts = lambda v: Embedding.point(torch.tensor([[float(a), 0.0] for a in v]))  # noqa: E731
    eta = np.zeros(len(xs)) if eta is None else np.asarray(eta, dtype=float)
    return EmbeddedSet(pts(xs), pts(xs if corrupt_xs is None else corrupt_xs), np.asarray(labels), eta, eta)


def test_knn_hand_case_two_clusters_with_intruder():
    # class 0 at 0..4 plus an intruder at 102.5 inside the class-1 cluster at 100..105
    xs = [0, 1, 2, 3, 4, 102.5, 100, 101, 102, 103, 104, 105]
    labels = [0] * 6 + [1] * 6
    eta = [0.1] * 12
    eta[5] = 0.9  # the intruder is the most uncertain probe
    es = _line_set(xs, labels, eta)
    out = knn(es, k=5, n_bins=3)
    expected = np.ones(12, bool)
    expected[5] = False  # its 5 neighbours are all class 1; everyone else keeps >= 4 of 5 of its class
    np.testing.assert_array_equal(out["correct"], expected)
    assert out["acc"] == pytest.approx(11 / 12)
    np.testing.assert_allclose(out["acc_bins"], [1.0, 1.0, 0.75])
    assert out["tau"] == pytest.approx(-stats.kendalltau([0, 1, 2], [1.0, 1.0, 0.75]).statistic)
    assert out["tau"] > 0


def test_knn_majority_versus_plurality_hand_case():
    # 6 items: each probe's 5 neighbours are all the others
    es = _line_set([0, 1, 2, 10, 11, 20], [0, 0, 0, 1, 1, 2])
    maj = knn(es, k=5, vote="majority", n_bins=2)
    # label-0 probes see 2-2-1 (no majority); label-1/2 probes see three 0s (majority 0, wrong)
    assert maj["acc"] == 0.0
    plu = knn(es, k=5, vote="plurality", n_bins=2)
    # label-0 probes: tie 0 vs 1 broken by the closest neighbour, which is a 0
    np.testing.assert_array_equal(plu["correct"], [True, True, True, False, False, False])
    assert plu["acc"] == 0.5


def test_tau_is_nan_when_eta_is_constant():
    es = _line_set([0, 1, 2, 10, 11, 20], [0, 0, 0, 1, 1, 2], eta=[0.3] * 6)
    assert math.isnan(knn(es, k=5, vote="plurality", n_bins=2)["tau"])
    torch.manual_seed(0)
    out = table1_metrics(build_model("point", n_digits=1, dim=2), tiny_ndigit(1, "test_seen", 120, seed=5), n_pairs=120)
    assert all(math.isnan(out[k]) for k in ("tau_ap_clean", "tau_ap_corrupt", "tau_knn_clean", "tau_knn_corrupt"))


def test_knn_never_retrieves_own_twin():
    # the corrupt twin sits exactly on the probe: excluded, so results equal the clean-gallery ones
    xs = [0, 1, 2, 3, 4, 102.5, 100, 101, 102, 103, 104, 105]
    es = _line_set(xs, [0] * 6 + [1] * 6)
    assert knn(es, gallery_corrupt=True, k=5, n_bins=3)["acc"] == pytest.approx(11 / 12)
    # move the intruder's twin into its own cluster: the probe must not find it
    es2 = _line_set(xs, [0] * 6 + [1] * 6, corrupt_xs=xs[:5] + [2.5] + xs[6:])
    assert not knn(es2, gallery_corrupt=True, k=5, n_bins=3)["correct"][5]
    # but other class-0 probes now have a fifth class-0 neighbour in the gallery
    assert knn(es2, gallery_corrupt=True, k=5, n_bins=3)["correct"][:5].all()


def _naive_knn(probe_means, gallery_means, labels, k, vote, dist=None):
    """Brute-force KNN; ``dist(i, j)`` overrides the Euclidean distance between means."""
    dist = dist or (lambda i, j: float(np.linalg.norm(probe_means[i] - gallery_means[j])))
    correct = []
    for i in range(len(probe_means)):
        d = [(dist(i, j), j) for j in range(len(gallery_means)) if j != i]
        nb = [labels[j] for _, j in sorted(d)[:k]]
        counts = {c: nb.count(c) for c in nb}
        top = max(counts.values())
        pred = next(c for c in nb if counts[c] == top)  # plurality: closest among the tied classes
        if vote == "majority" and not 2 * top > k:
            pred = -1  # no class holds more than k/2 of the votes
        correct.append(pred == labels[i])
    return np.array(correct)


@pytest.mark.parametrize("vote", ["majority", "plurality"])
@pytest.mark.parametrize("gallery_corrupt", [False, True])
def test_knn_vs_naive_implementation_on_mixtures(vote, gallery_corrupt):
    g = torch.Generator().manual_seed(0)
    n, labels = 60, np.repeat(np.arange(6), 10)
    centres = 3 * torch.randn(6, 2, generator=g)
    mk = lambda: Embedding.mixture(  # noqa: E731  MoG-2 around the class centres
        centres[labels][:, None] + torch.randn(n, 2, 2, generator=g),
        torch.rand(n, 2, 2, generator=g), torch.softmax(torch.randn(n, 2, generator=g), 1))
    clean, corrupt = mk(), mk()
    eta = torch.rand(n, generator=g).numpy()
    es = EmbeddedSet(clean, corrupt, labels, eta, eta)
    out = knn(es, gallery_corrupt=gallery_corrupt, k=5, vote=vote, rank="mean")
    gallery = corrupt if gallery_corrupt else clean
    expected = _naive_knn(clean.mixture_mean().numpy(), gallery.mixture_mean().numpy(), labels, 5, vote)
    np.testing.assert_array_equal(out["correct"], expected)
    assert out["acc"] == pytest.approx(expected.mean())
    assert 0.2 < out["acc"] < 1.0  # a non-trivial case


# --------------------------------------------------------------------------- evaluation: verification, Table 1
class _MatchOnly:
    def __init__(self, a, b):
        self.match = SoftMatch(a, b)


def test_verification_point_embeddings_vs_sklearn():
    g = torch.Generator().manual_seed(0)
    labels = np.repeat(np.arange(8), 25)
    z = torch.randn(8, 2, generator=g)[labels] + 0.7 * torch.randn(200, 2, generator=g)
    eta = np.linspace(0, 1, 200)
    es = EmbeddedSet(Embedding.point(z), Embedding.point(z + 0.5), labels, eta, eta)
    model = _MatchOnly(1.5, 1.0)
    out = verification(model, es, corrupt=False, n_pairs=200, seed=3)
    i, j, same = M.verification_pairs(labels, 200, 3)
    a = model.match.a.item()
    p = torch.sigmoid(-a * (z[i] - z[j]).norm(dim=-1) + 1.0).numpy()
    assert out["ap"] == pytest.approx(average_precision_score(same, p), abs=1e-6)
    assert out["ap_bins"].shape == (20,)
    out_c = verification(model, es, corrupt=True, n_pairs=200, seed=3)
    assert out_c["ap"] == pytest.approx(out["ap"], abs=1e-6)  # a shifted copy has the same distances


@pytest.mark.parametrize("kind", ["point", "hib"])
def test_table1_metrics_keys_and_ranges(kind):
    torch.manual_seed(0)
    model = build_model(kind, n_digits=1, dim=2)
    test = tiny_ndigit(1, "test_seen", 120, seed=5)
    out = table1_metrics(model, test, n_pairs=200)
    keys = {f"{m}_{s}" for m in ("ap", "tau_ap", "knn", "tau_knn") for s in ("clean", "corrupt")}
    keys |= {"var_clean", "var_corrupt", "var_ratio", "eta_clean", "eta_corrupt"}
    assert set(out) == keys
    assert all(isinstance(v, float) for v in out.values())
    for s in ("clean", "corrupt"):
        assert 0 <= out[f"ap_{s}"] <= 1 and 0 <= out[f"knn_{s}"] <= 1
        for t in (out[f"tau_ap_{s}"], out[f"tau_knn_{s}"]):
            assert math.isnan(t) or -1 <= t <= 1
    assert 0 <= out["eta_clean"] <= 1 and 0 <= out["eta_corrupt"] <= 1
    es = embed_set(model, test)
    assert out["eta_clean"] == pytest.approx(float(self_mismatch(es.clean, model.match).mean()), rel=1e-6)
    if kind == "point":
        assert out["var_clean"] == 0 and math.isnan(out["var_ratio"])
        assert out["eta_clean"] == pytest.approx(1 - torch.sigmoid(model.match.b).item(), abs=1e-6)
    else:
        assert out["var_clean"] > 0 and out["var_ratio"] == pytest.approx(out["var_corrupt"] / out["var_clean"])


def test_embed_set_shapes_and_eta():
    torch.manual_seed(0)
    model = build_model("hib", n_digits=1, dim=2, components=2)
    test = tiny_ndigit(1, "test_seen", 40, seed=6)
    es = embed_set(model, test)
    assert len(es.clean) == len(es.corrupt) == 40 and es.clean.n_components == 2
    np.testing.assert_array_equal(es.labels, test.labels)
    assert es.eta_clean.shape == es.eta_corrupt.shape == (40,)
    np.testing.assert_allclose(es.eta_corrupt, self_mismatch(es.corrupt, model.match).numpy())
    assert es.side(True)[0] is es.corrupt and es.side(False)[1] is es.eta_clean


def _mog_set(seed=0, n=60, match=None):
    g = torch.Generator().manual_seed(seed)
    labels = np.repeat(np.arange(6), n // 6)
    centres = 3 * torch.randn(6, 2, generator=g)
    mk = lambda: Embedding.mixture(  # noqa: E731  MoG-2 around the class centres, variances up to 4
        centres[labels][:, None] + torch.randn(n, 2, 2, generator=g),
        4 * torch.rand(n, 2, 2, generator=g), torch.softmax(torch.randn(n, 2, generator=g), 1))
    eta = torch.rand(n, generator=g).numpy()
    return EmbeddedSet(mk(), mk(), labels, eta, eta, match)


@pytest.mark.parametrize("gallery_corrupt", [False, True])
def test_knn_by_match_probability_vs_naive_pairwise(gallery_corrupt):
    """Second implementation: rank by -p(m|probe, gallery) computed one pair at a time."""
    from hedgekit.models.match import SoftMatch
    from hedgekit.uncertainty import match_probability

    es = _mog_set(match=SoftMatch(2.0, 3.0))
    gallery = es.corrupt if gallery_corrupt else es.clean

    def neg_p(i, j):
        return -float(match_probability(es.clean[i], gallery[j], es.match, n_points=16))

    out = knn(es, gallery_corrupt=gallery_corrupt, k=5, vote="plurality")
    expected = _naive_knn(es.clean.mixture_mean().numpy(), gallery.mixture_mean().numpy(), es.labels, 5,
                          "plurality", neg_p)
    np.testing.assert_array_equal(out["correct"], expected)
    # the variances matter: ranking by the means alone gives different neighbours here
    mean_rank = knn(es, gallery_corrupt=gallery_corrupt, k=5, vote="plurality", rank="mean")
    assert (mean_rank["correct"] != out["correct"]).any()


def test_knn_match_ranking_prefers_the_confident_gallery_item():
    """Two gallery items at the same distance from probe 0: the narrow one matches it better."""
    from hedgekit.models.match import SoftMatch

    mean = torch.tensor([[0.0, 0.0], [-1.0, 0.0], [1.0, 0.0], [9.0, 9.0]])
    var = torch.tensor([[1e-4], [4.0], [1e-4], [1e-4]]).expand(4, 2)  # item 1 is broad
    emb = Embedding.gaussian(mean, var)
    es = EmbeddedSet(emb, emb, np.array([0, 1, 0, 1]), np.zeros(4), np.zeros(4), SoftMatch(2.0, 2.0))
    assert knn(es, k=1, n_bins=1)["correct"][0]  # narrow item 2 (class 0) is the neighbour
    assert not knn(es, k=1, n_bins=1, rank="mean")["correct"][0]  # mean tie -> lower index 1 (class 1)


def test_knn_match_ranking_needs_the_match_function():
    es = _mog_set(match=None)
    with pytest.raises(InputError, match="SoftMatch"):
        knn(es)
    with pytest.raises(InputError, match="rank"):
        knn(_mog_set(match=None), rank="median")
