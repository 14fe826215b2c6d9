"""hedgekit.papers.taha.ambiguity_noise (issue 49 item 1): the early stop picks the best validation read, a run's
data are drawn from its seed (validation held out of the noisy training set, never the clean subset), random
cleaning is the mean of its permutations, and a tiny study returns Table 2's rows, the verdict and sigma^2's figure
(Fashion-MNIST replaced by a small synthetic set)."""
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


def _images(n, seed):
    """Synthetic garments: the class sets the brightness of a band, so classes are learnable."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 10
    x = rng.integers(0, 60, (n, 28, 28))
    for c in range(10):
        x[y == c, 2 * c:2 * c + 6] += 150
    return x.astype(np.uint8), y


@pytest.fixture
def synthetic(monkeypatch):
    sets = {"train": _images(1500, 0), "test": _images(400, 1)}
    monkeypatch.setattr(AN, "fashion", lambda split: (sets[split][0], sets[split][1].copy()))
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
    res = AN.run_study([3], TINY, detect_images=300, cache_dir=tmp_path)
    assert list(res["rows"].index) == [*NOISE_ROWS, *NS.CLEANING_ROWS]
    assert res["verdict"].title == AN.TITLE and "noise that is not" in res["verdict"].markdown()
    assert len(res["records"]) == 3 and all(r.steps <= 6 for r in res["records"])
    assert len(list(tmp_path.glob("amb49-*.pt"))) == 3
    assert len(res["figure"].axes[0].get_xticklabels()) == 4
    # the random row is the mean of 20 random removals of the het model's gallery
    data = AN.run_data(3, TINY)
    models, _ = AN.train_run(3, TINY, data, tmp_path)  # loaded from the cache
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
