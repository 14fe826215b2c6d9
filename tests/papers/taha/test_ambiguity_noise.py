"""hedgekit.papers.taha.ambiguity_noise: the early stop picks the best validation read, a run's
data are drawn from its seed (validation held out of the noisy training set, never the clean subset), random
cleaning is the mean of its permutations, a tiny study returns Table 2's rows, the verdict and sigma^2's figure, and
the models are kept in the zoo's store and reused only when their file, design and data are the ones asked for
(Fashion-MNIST replaced by a small synthetic set, HEDGEKIT_DATA in tmp_path)."""
import warnings

import numpy as np
import pytest
import torch

from hedgekit.errors import InputError
from hedgekit.evaluation import metrics as M
from hedgekit.evaluation.retrieval import map_after_removing_uncertain
from hedgekit.papers.taha import ambiguity_noise as AN
from hedgekit.papers.taha import noise_study as NS
from hedgekit.papers.taha import protocol as P
from hedgekit.papers.taha.experiments import NOISE_ROWS
from hedgekit.training.triplets import TripletConfig
from hedgekit.zoo import Spec
from hedgekit.zoo.store import load_checkpoint, save_checkpoint


def _images(n, seed):
    """Synthetic garments: the class sets the brightness of a band, so classes are learnable."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 10
    x = rng.integers(0, 60, (n, 28, 28))
    for c in range(10):
        x[y == c, 2 * c:2 * c + 6] += 150
    return x.astype(np.uint8), y


@pytest.fixture
def synthetic(monkeypatch, tmp_path):
    """Small synthetic sets for Fashion-MNIST, and the data root (the zoo's store) in ``tmp_path / "data"``."""
    sets = {"train": _images(1500, 0), "test": _images(400, 1)}
    monkeypatch.setattr(AN, "fashion", lambda split: (sets[split][0], sets[split][1].copy()))
    monkeypatch.setenv("HEDGEKIT_DATA", str(tmp_path / "data"))
    return sets


TINY = AN.Design(clean_fraction=0.15, val_images=200, steps=6, eval_every=2, patience=2)


def _fit(scores, patience=2, steps=12):
    torch.manual_seed(0)
    model = Spec(kind="het", data="fashion", recipe="noisy", dim=4).build()
    x, y = _images(80, 3)
    states, reads = [], iter(scores)

    def score(m, images, labels, seed):
        assert not m.training  # read in eval mode
        states.append({k: v.detach().clone() for k, v in m.state_dict().items()})
        return next(reads)

    cfg = TripletConfig(steps=steps, P=2, K=2, log_every=2, occlusion_p=0.0)
    info = AN.fit_early_stopped(model, torch.from_numpy(x), torch.from_numpy(y), cfg, x, y, patience=patience,
                                score=score)
    return model, info, states


def test_early_stop_keeps_the_weights_of_the_best_validation_read():
    model, info, states = _fit([0.1, 0.5, 0.3, 0.5, 0.2, 0.9])  # best at the 2nd read (step 2), ties keep it
    assert [s for s, _ in info["scores"]] == [0, 2, 4, 6]  # stopped: two reads without a new best
    assert info["best_step"] == 2 and info["best_score"] == 0.5 and info["stopped_at"] == 6
    for k, v in model.state_dict().items():
        torch.testing.assert_close(v, states[1][k])
    assert not model.training


def test_early_stop_trains_to_the_end_while_the_score_improves():
    model, info, states = _fit([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7])
    assert info["best_step"] == info["stopped_at"] == 11  # the last step is a log step too
    for k, v in model.state_dict().items():
        torch.testing.assert_close(v, states[-1][k])


def test_run_data_holds_out_a_noisy_validation_split_drawn_from_the_seed(synthetic):
    a, b = AN.run_data(0, TINY), AN.run_data(1, TINY)
    tr, val = a["train"], a["val"]
    assert len(val["labels"]) == 200 and len(tr["labels"]) == 1300
    assert not val["clean"].any() and tr["clean"].sum() == round(0.15 * 1500)
    assert val["flipped"].any() and np.array_equal(val["flipped"], val["labels"] != val["true"])
    assert a["test"]["ambiguous"].mean() == pytest.approx(0.3, abs=0.01)
    np.testing.assert_array_equal(a["test"]["labels"], synthetic["test"][1])  # the gallery keeps true labels
    again = AN.run_data(0, TINY)
    np.testing.assert_array_equal(again["train"]["labels"], tr["labels"])
    np.testing.assert_array_equal(again["test"]["images"], a["test"]["images"])
    assert not np.array_equal(b["test"]["ambiguous"], a["test"]["ambiguous"])
    assert not np.array_equal(b["val"]["images"], val["images"])


def test_design_refuses_fewer_than_20_permutations():
    with pytest.raises(InputError, match="20 permutations"):
        AN.Design(permutations=5)
    assert AN.Design().key != AN.Design(weight_decay=2e-3).key


def test_sigma_groups_are_the_four_truths():
    u = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    flipped = np.array([0, 0, 1, 0, 1, 1], bool)
    amb = np.array([0, 0, 0, 1, 1, 1], bool)
    g = AN.sigma_groups(u, flipped, amb)
    assert g == {"single, label right": {"median": 1.5, "n": 2}, "single, flipped": {"median": 3.0, "n": 1},
                 "blend, own label": {"median": 4.0, "n": 1}, "blend, partner's label": {"median": 5.5, "n": 2}}


def test_tiny_study_returns_the_rows_the_verdict_and_the_figure(synthetic, tmp_path):
    res = AN.run_study([3], TINY, detect_images=300)
    assert list(res["rows"].index) == [*NOISE_ROWS, *NS.CLEANING_ROWS]
    assert res["verdict"].title == AN.TITLE and "noise that is not" in res["verdict"].markdown()
    assert len(res["records"]) == 3 and all(r.steps <= 6 for r in res["records"])
    stored = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert stored == sorted(f"data/checkpoints/amb49-{TINY.key}-{k}-{r}-s3.pt"
                            for k, r in [("triplet", "clean"), ("triplet", "noisy"), ("het", "noisy")])
    assert len(res["figure"].axes[0].get_xticklabels()) == 4
    # the random row is the mean of 20 random removals of the het model's gallery
    data = AN.run_data(3, TINY)
    models, _ = AN.train_run(3, TINY, data)  # loaded from the store
    emb, u = P.embed(models[NS.HET], data["test"]["images"])
    y = data["test"]["labels"]
    q, g = P.split(y, 3)
    rand = [map_after_removing_uncertain(emb[q], y[q], emb[g], y[g], u[g], [0.2], rng=np.random.default_rng([3, 6, k]),
                                         random=True)[0]["map"] for k in range(20)]
    assert res["summary"]["map"]["random cleaning 20%"][0] == pytest.approx(np.mean(rand))
    assert res["summary"]["random_sd"][0] == pytest.approx(np.std(rand, ddof=1))
    assert res["summary"]["map"][NS.HET][0] == pytest.approx(P.retrieval_metrics(emb, y, 3)["map"])


def test_the_cleaned_validation_score_removes_the_most_uncertain_fifth_of_the_gallery():
    torch.manual_seed(0)
    model = Spec(kind="het", data="fashion", recipe="noisy", dim=4).build().eval()
    x, y = _images(200, 4)
    emb, u = P.embed(model, x)
    q, g = P.split(y, 2)
    keep = np.ones(len(g), bool)
    keep[np.argsort(-u[g], kind="stable")[:int(round(0.2 * len(g)))]] = False  # brute force
    assert AN.cleaned_validation_map(model, x, y, 2) == pytest.approx(
        M.mean_average_precision(emb[q], y[q], emb[g][keep], y[g][keep]))
    assert AN.validation_map(model, x, y, 2) == pytest.approx(M.mean_average_precision(emb[q], y[q], emb[g], y[g]))
    with pytest.raises(InputError, match="stop_on"):
        AN.Design(stop_on="loss")


def test_blend_removal_oracle_removes_only_blends():
    # one dimension: class 0 near 0, class 1 near 10; gallery blends of class 0 sit at 6, nearer class 1's queries
    y = np.array([0, 1] * 20)
    q, g = P.split(y, 0)
    emb = np.where(y == 0, 0.0, 10.0)[:, None] + np.arange(40)[:, None] * 1e-3
    amb = np.zeros(40, bool)
    blends = g[y[g] == 0][:3]
    emb[blends] = 6.0
    amb[blends] = True
    n = int(round(0.2 * len(g)))
    assert n >= 3  # all three blends go, and nothing else
    keep = ~amb[g]
    assert AN.blends_removed_map(emb, y, amb, 0) == pytest.approx(
        M.mean_average_precision(emb[q], y[q], emb[g][keep], y[g][keep]))
    assert AN.blends_removed_map(emb, y, amb, 0) == pytest.approx(1.0)


def _spy_fit(monkeypatch):
    """Count `fit_early_stopped`'s calls (the models trained) while it still trains."""
    calls = []
    fit = AN.fit_early_stopped

    def spy(*args, **kwargs):
        calls.append(args[0])
        return fit(*args, **kwargs)

    monkeypatch.setattr(AN, "fit_early_stopped", spy)
    return calls


def _same_weights(a, b):
    return all(torch.equal(v, b.state_dict()[k]) for k, v in a.state_dict().items())


def test_train_run_keeps_its_models_in_the_zoo_store_and_loads_them_back(synthetic, tmp_path, monkeypatch):
    calls = _spy_fit(monkeypatch)
    data = AN.run_data(2, TINY)
    first, recs = AN.train_run(2, TINY, data)
    assert len(calls) == 3 and {r.source for r in recs} == {"trained now"}
    for label, rec in zip(NOISE_ROWS, recs):
        assert rec.path == str(tmp_path / "data" / "checkpoints" / f"{rec.name}.pt") == str(AN.cached_model_path(
            rec.name))
        model, meta = load_checkpoint(rec.path)  # the store's format: hashed, finite, loadable by the zoo
        assert _same_weights(model, first[label])
        assert meta["design"] == {**TINY.__dict__} and meta["row"] == label and meta["seed"] == 2
        assert meta["kind"] == NOISE_ROWS[label][0] and meta["data"] == AN.run_digest(data)
        assert meta["best_step"] + 1 == rec.steps and meta["stopped_at"] == rec.stopped_at
        assert [s for s, _ in meta["scores"]][-1] == rec.stopped_at and meta["seconds"] == rec.train_seconds
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a good file is loaded without a word
        again, recs2 = AN.train_run(2, TINY, data)
    assert len(calls) == 3  # nothing trained
    assert [r.source for r in recs2] == ["cache"] * 3
    assert [(r.name, r.steps, r.stopped_at, r.train_seconds) for r in recs2] == \
        [(r.name, r.steps, r.stopped_at, r.train_seconds) for r in recs]
    for label in NOISE_ROWS:
        assert _same_weights(again[label], first[label]) and not again[label].training


def test_a_stored_model_of_another_design_or_data_is_retrained_and_replaced(synthetic, monkeypatch):
    data = AN.run_data(2, TINY)
    _, recs = AN.train_run(2, TINY, data)
    calls = _spy_fit(monkeypatch)
    het = recs[-1].path
    model, meta = load_checkpoint(het)
    # a file under this design's name that records another design (e.g. a field added to Design since)
    save_checkpoint(het, model, {**meta, "design": {**meta["design"], "weight_decay": 1e-3}})
    with pytest.warns(UserWarning, match="another design"):
        _, recs2 = AN.train_run(2, TINY, data)
    assert len(calls) == 1 and [r.source for r in recs2] == ["cache", "cache", "trained now"]
    assert load_checkpoint(het)[1]["design"] == {**TINY.__dict__}  # replaced
    # the same names, but the run's training data differ (another noise draw)
    data2 = {**data, "train": {**data["train"], "labels": (data["train"]["labels"] + 1) % 10}}
    with pytest.warns(UserWarning, match="other training data"):
        _, recs3 = AN.train_run(2, TINY, data2)
    assert len(calls) == 4 and {r.source for r in recs3} == {"trained now"}


def test_a_corrupt_stored_model_is_retrained_with_the_stores_reason(synthetic, monkeypatch):
    data = AN.run_data(2, TINY)
    first, recs = AN.train_run(2, TINY, data)
    calls = _spy_fit(monkeypatch)
    path = AN.cached_model_path(recs[0].name)
    raw = bytearray(path.read_bytes())
    path.write_bytes(bytes(raw[:len(raw) // 2]))  # truncated
    with pytest.warns(UserWarning, match="retraining: .*not a readable hedgekit checkpoint"):
        models, recs2 = AN.train_run(2, TINY, data)
    assert len(calls) == 1 and [r.source for r in recs2] == ["trained now", "cache", "cache"]
    model, _ = load_checkpoint(path)  # replaced by a good file, with the same weights as the first training
    assert _same_weights(model, first["clean subset only"]) and _same_weights(model, models["clean subset only"])


def test_without_cache_nothing_is_read_or_written(synthetic, tmp_path, monkeypatch):
    calls = _spy_fit(monkeypatch)
    data = AN.run_data(2, TINY)
    AN.train_run(2, TINY, data)
    _, recs = AN.train_run(2, TINY, data, cache=False)
    assert len(calls) == 6 and {(r.source, r.path) for r in recs} == {("trained now", "")}
    AN.cached_model_path(recs[0].name).unlink()
    AN.train_run(2, TINY, data, cache=False)
    assert not AN.cached_model_path(recs[0].name).exists()


def test_maps_after_removals_equal_a_ranking_of_each_remaining_gallery():
    rng = np.random.default_rng(0)
    emb = rng.integers(0, 3, (90, 2)).astype(float)  # many ties in distance: broken by gallery order
    y = rng.integers(0, 4, 90)
    q, g = np.arange(30), np.arange(30, 90)
    removals = [rng.permutation(60)[:12], np.arange(12), np.array([], int), np.flatnonzero(y[g] == 0)]
    got = AN.maps_after_removals(emb[q], y[q], emb[g], y[g], removals, chunk=7)
    for r, m in zip(removals, got):
        keep = np.setdiff1d(np.arange(60), r)  # the rest, in gallery order
        assert m == pytest.approx(M.mean_average_precision(emb[q], y[q], emb[g][keep], y[g][keep]), abs=1e-12)
    assert len(set(got)) == 4
    with pytest.raises(InputError, match="no query"):
        AN.maps_after_removals(emb[q], np.full(30, 9), emb[g], y[g], removals)
