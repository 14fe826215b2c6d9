"""The upstream loop of the URL benchmark: labels are checked once at its start, on_step sees each step's batch after
that step's optimiser update, and predict collects e(x), u(x) and logits batch by batch."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from hedgekit.errors import InputError
from hedgekit.methods.upstream import build_method
from hedgekit.training.upstream import (UpstreamConfig, UpstreamModel, fit_upstream, predict, uniform_batches,
                                        watch_row)


def _jitter(x, rng):
    """A random augmentation drawn from the trainer's rng (the two views of an image differ)."""
    return x + torch.from_numpy(rng.uniform(0, 0.1, x.shape)).to(x.dtype)


class Recorder(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)
        self.seen = []  # (weight at forward time, weight when on_step ran, batch labels)

    def forward(self, f):
        logits = self.lin(f)
        return {"embedding": logits, "uncertainty": -logits.max(1).values, "logits": logits,
                "w": self.lin.weight.detach().clone()}

    def loss(self, out, labels):
        return F.cross_entropy(out["logits"], labels)

    def on_step(self, features, out, labels):
        self.seen.append((out["w"], self.lin.weight.detach().clone(), labels.clone()))


def test_on_step_runs_after_every_optimiser_step():
    x = torch.rand(30, 1, 2, 2)
    y = torch.arange(3).repeat(10)
    head = Recorder()
    model = UpstreamModel(nn.Flatten(), head)
    fit_upstream(model, x, y, UpstreamConfig(steps=5, classes_per_batch=3, per_class=2, occlusion_p=0.0),
                 progress=False)
    assert len(head.seen) == 5
    for before, after, labels in head.seen:
        assert not torch.equal(before, after)  # the hook saw the weights after the update
        assert sorted(labels.tolist()) == [0, 0, 1, 1, 2, 2]  # P = 3 classes x Q = 2
    torch.testing.assert_close(head.seen[-1][1], head.lin.weight.detach())


def test_augment_gets_the_batch_as_stored_and_the_backbone_floats_in_unit_range():
    """uint8 images reach ``augment`` as uint8 (notebook 09 converts them itself), its output reaches the
    backbone as float32 in [0, 1]; float images stay float."""
    y = torch.arange(3).repeat(10)
    for x in ((torch.rand(30, 1, 2, 2) * 255).to(torch.uint8), torch.rand(30, 1, 2, 2)):
        got, fed = [], []

        def augment(xb, rng):
            got.append(xb.dtype)
            return xb

        class Probe(nn.Flatten):
            def forward(self, xb):
                fed.append((xb.dtype, float(xb.min()), float(xb.max())))
                return super().forward(xb)

        fit_upstream(UpstreamModel(Probe(), Recorder()), x, y, UpstreamConfig(steps=2, classes_per_batch=3,
                                                                             per_class=2), augment=augment,
                     progress=False)
        assert set(got) == {x.dtype}
        assert all(dtype == torch.float32 and 0.0 <= lo and hi <= 1.0 for dtype, lo, hi in fed)
        assert max(hi for _, _, hi in fed) > 0.5  # not divided by 255 twice


def test_labels_are_checked_once_when_training_starts():
    """The labels' dtype, shape and range against the head's n_classes are refused before any step (the losses no
    longer check them); int32 labels train exactly as int64 ones."""
    x, y = torch.rand(12, 1, 2, 2), torch.arange(3).repeat(4)
    cfg = UpstreamConfig(steps=2, classes_per_batch=2, per_class=2)
    model = UpstreamModel(nn.Flatten(), build_method("ce", 4, 3, embed_dim=2))
    integers = r"integer tensor \(N,\) of class indices 0\.\.n_classes-1"
    for bad, expected in ((y + 3, r"0\.\.2 \(the head's n_classes = 3\); got labels 3\.\.5"),
                          (y - 1, r"class indices 0\.\.2 .*got labels -1\.\.1"),
                          (y.float(), rf"{integers}; got torch.float32 of shape \(12,\)"),
                          (y[:, None], r"got torch.int64 of shape \(12, 1\)")):
        with pytest.raises(InputError, match=expected):
            fit_upstream(model, x, bad, cfg, progress=False)
    with pytest.raises(InputError, match=r"0\.\.C-1; got labels -1\.\.1"):  # a head without n_classes
        fit_upstream(UpstreamModel(nn.Flatten(), Recorder()), x, y - 1, cfg, progress=False)
    weights = []
    for labels in (y, y.int()):
        torch.manual_seed(0)
        model = UpstreamModel(nn.Flatten(), build_method("ce", 4, 3, embed_dim=2))
        fit_upstream(model, x, labels, cfg, progress=False)
        weights.append(model.head.classifier.weight.detach().clone())
    torch.testing.assert_close(weights[0], weights[1], rtol=0, atol=0)


@pytest.mark.parametrize("name", ["infonce", "mcinfonce", "hib"])
def test_pairwise_heads_need_two_images_of_every_class(name):
    """InfoNCE, MCInfoNCE and HIB compare images of one class in a batch: the class-balanced sampler would pair
    a class's only image with itself, so training refuses such a class up front; CE trains on the same data."""
    x, y = torch.rand(9, 1, 2, 2), torch.tensor([0, 0, 0, 1, 1, 1, 2, 2, 3])  # class 3 has one image
    cfg = UpstreamConfig(steps=2, classes_per_batch=2, per_class=2)
    head = build_method(name, 4, 4, embed_dim=3)
    assert head.pairwise
    with pytest.raises(InputError, match=rf"{name} compares .* at least two images .* classes \[3\] have one image"):
        fit_upstream(UpstreamModel(nn.Flatten(), head), x, y, cfg, progress=False)
    assert fit_upstream(UpstreamModel(nn.Flatten(), head), x[:-1], y[:-1], cfg, progress=False).rows
    assert fit_upstream(UpstreamModel(nn.Flatten(), build_method("ce", 4, 4, embed_dim=3)), x, y, cfg,
                        progress=False).rows


def test_predict_concatenates_batches_in_eval_mode():
    model = UpstreamModel(nn.Sequential(nn.Flatten(), nn.Dropout(0.5)), Recorder())
    x = torch.rand(7, 1, 2, 2)
    out = predict(model, x, batch=3)
    assert not model.training
    ref = model.head.lin(x.flatten(1)).double().detach().numpy()  # dropout is off in eval mode
    np.testing.assert_allclose(out["logits"], ref, rtol=1e-6)
    assert out["embedding"].shape == (7, 3) and out["uncertainty"].shape == (7,)


@pytest.mark.parametrize("name", ["infonce_2v", "mcinfonce_2v"])
def test_an_unsupervised_heads_loss_gets_labels_none(name, monkeypatch):
    """The entry point withholds the labels (the loss does not refuse them): every step hands an
    unsupervised head's loss labels=None and the 2B = 12 views of its 6 images."""
    head = build_method(name, 16, 4, embed_dim=3)
    calls, loss = [], head.loss
    monkeypatch.setattr(head, "loss", lambda out, labels: calls.append((labels, len(out["embedding"]))) or
                        loss(out, labels))
    fit_upstream(UpstreamModel(nn.Flatten(), head), torch.rand(40, 1, 4, 4), torch.arange(4).repeat(10),
                 UpstreamConfig(steps=3, classes_per_batch=2, per_class=3), augment=_jitter, progress=False)
    assert calls == [(None, 12)] * 3


def test_unsupervised_heads_never_see_a_label():
    """Two-view InfoNCE trained with the labels or with the labels shuffled ends with the same weights: no label
    reaches the batches, the views or the loss (which gets labels=None, the test above)."""
    x = torch.rand(40, 1, 4, 4)
    y = torch.arange(4).repeat(10)
    weights = []
    for labels in (y, y[torch.randperm(40, generator=torch.Generator().manual_seed(0))], torch.zeros(40, dtype=torch.int64)):
        torch.manual_seed(0)
        model = UpstreamModel(nn.Flatten(), build_method("infonce_2v", 16, 4, embed_dim=3))
        fit_upstream(model, x, labels, UpstreamConfig(steps=3, classes_per_batch=2, per_class=3), seed=1,
                     augment=_jitter, progress=False)
        weights.append(model.head.project.weight.detach().clone())
    torch.testing.assert_close(weights[0], weights[1], rtol=0, atol=0)
    torch.testing.assert_close(weights[0], weights[2], rtol=0, atol=0)
    with pytest.raises(InputError, match="at least 8 images"):
        next(uniform_batches(5, 8, 0))




def test_watch_rows_measure_u_and_kappa_without_changing_the_training():
    """watch=(x, y) adds `watch_row` to every logged row: the spread of u(x) and kappa(x) and R@1 / R-AUROC on the
    watched images; the losses and weights are those of the same run unwatched."""
    x, y = torch.rand(40, 1, 4, 4), torch.arange(4).repeat(10)
    cfg = UpstreamConfig(steps=4, classes_per_batch=2, per_class=3, log_every=2)
    runs = []
    for watch in (None, (x[:12], y[:12])):
        torch.manual_seed(0)
        model = UpstreamModel(nn.Flatten(), build_method("mcinfonce", 16, 4, embed_dim=3))
        runs.append((fit_upstream(model, x, y, cfg, seed=1, progress=False, watch=watch), model))
    (plain, m0), (watched, m1) = runs
    assert [r["loss"] for r in plain.rows] == [r["loss"] for r in watched.rows]
    torch.testing.assert_close(m0.head.project.weight, m1.head.project.weight, rtol=0, atol=0)
    assert [r["step"] for r in watched.rows] == [0, 2, 3]
    assert {"u_cv", "kappa_cv", "kappa_mean", "r1", "rauroc"} <= set(watched.rows[-1])
    row = watch_row(m1, x[:12], y[:12])
    out = predict(m1, x[:12])
    assert row["kappa_cv"] == pytest.approx(np.std(out["kappa"]) / np.mean(out["kappa"]))
    assert row["u_cv"] == pytest.approx(np.std(1 / out["kappa"]) / np.mean(1 / out["kappa"]), rel=1e-4)  # float32 u
    assert row["kappa_mean"] == pytest.approx(np.mean(out["kappa"]))


def test_a_watched_constant_u_has_no_spread():
    model = UpstreamModel(nn.Flatten(), build_method("elk", 16, 4, embed_dim=3))
    with torch.no_grad():
        model.head.u_net[-1].weight.zero_()
    row = watch_row(model, torch.rand(12, 1, 4, 4), torch.arange(4).repeat(3))
    assert row["kappa_cv"] == 0 and row["u_cv"] == 0


def test_a_watched_model_that_diverged_gives_nan_rows():
    model = UpstreamModel(nn.Flatten(), build_method("elk", 16, 4, embed_dim=3))
    with torch.no_grad():
        model.head.project.weight.fill_(float("nan"))
    row = watch_row(model, torch.rand(8, 1, 4, 4), torch.arange(4).repeat(2))
    assert set(row) == {"u_cv", "r1", "rauroc"} and all(np.isnan(v) for v in row.values())
