"""Tests of hedgekit.training.seeds: S seeds trained as one stacked model against S runs of `fit`."""
import pytest
import torch

from hedgekit.data import random_occlusion
from hedgekit.embedding import Embedding
from hedgekit.errors import InputError
from hedgekit.methods import hib_batch_loss
from hedgekit.nets import build_model
from hedgekit.training.fit import TrainConfig, fit
from hedgekit.training.seeds import fit_seeds, seeds_loss

SEEDS = (1, 2)


def _data():
    gen = torch.Generator().manual_seed(3)
    images = torch.randint(0, 256, (400, 28, 56), dtype=torch.uint8, generator=gen)
    return images, torch.randperm(400, generator=gen) % 20


def _model(kind, seed):
    torch.manual_seed(100 + seed)
    return build_model(kind, 2, 2)


def _both(kind, k, steps=6):
    """(fit's models and histories, fit_seeds' models and histories) for SEEDS, from the same initial weights."""
    images, labels = _data()
    cfg = TrainConfig(steps=steps, classes_per_batch=8, per_class=4, k=k, log_every=1)
    ref = []
    for s in SEEDS:
        m = _model(kind, s)
        ref.append((m, fit(m, images, labels, cfg, seed=s, progress=False, augment=random_occlusion(0.2))))
    models = [_model(kind, s) for s in SEEDS]
    hists = fit_seeds(models, SEEDS, images, labels, cfg, augment=random_occlusion(0.2), progress=False)
    return ref, list(zip(models, hists))


def _losses(hist):
    return [row["loss"] for row in hist.rows]


def test_each_hib_seed_trains_as_fit_trains_it():
    """Same batches, occlusions, noise and initial weights per seed: 6 steps' losses agree to 1e-5 (measured:
    to the 6th decimal) and the weights to 1e-3 (measured 7e-5; float summation orders differ)."""
    ref, ours = _both("hib", 4)
    for (m_ref, h_ref), (m, h) in zip(ref, ours):
        assert _losses(h) == pytest.approx(_losses(h_ref), rel=1e-5)
        for name, w in m_ref.state_dict().items():
            torch.testing.assert_close(m.state_dict()[name], w, rtol=0, atol=1e-3, msg=name)
    assert _losses(ours[0][1]) != _losses(ours[1][1])  # two seeds, two trainings


def test_each_point_seed_starts_as_fit_starts_it():
    """A point model's first loss (its own batch and initial weights) agrees to 1e-6; its later losses to 2%:
    its head's bias has a gradient of float noise (distances ignore a shift), and Adam turns noise into steps of
    the learning rate (measured: losses within 0.8%, weights within 0.011 after 6 steps at lr 3e-3)."""
    ref, ours = _both("point", 1)
    for (_, h_ref), (_, h) in zip(ref, ours):
        assert _losses(h)[0] == pytest.approx(_losses(h_ref)[0], rel=1e-6)
        assert _losses(h) == pytest.approx(_losses(h_ref), rel=2e-2)


def test_seeds_loss_is_hib_eq8_of_each_seed():
    """The stacked loss of S batches is `hib_batch_loss` of each, with the same Monte-Carlo noise."""
    gen = torch.Generator().manual_seed(0)
    mean, var = torch.randn(2, 12, 3, generator=gen), torch.rand(2, 12, 3, generator=gen) + 0.1
    labels = torch.stack([torch.arange(12) % 4, torch.arange(12) % 3])
    a, b = torch.tensor([1.5, 0.7]), torch.tensor([-0.2, 0.4])
    eps = torch.stack([torch.randn(12, 5, 3, generator=torch.Generator().manual_seed(s)) for s in (7, 8)])
    loss, nll = seeds_loss(mean, var, labels.unsqueeze(2) == labels.unsqueeze(1), a, b, eps, beta=0.01)
    for i, s in enumerate((7, 8)):
        model = build_model("hib", 2, 3)
        with torch.no_grad():
            model.match.a_raw.fill_(float(torch.log(torch.expm1(a[i])))), model.match.b.fill_(float(b[i]))
        emb = Embedding.gaussian(mean[i], var[i])
        want, stats = hib_batch_loss(emb, labels[i], model.match, 5, 0.01, torch.Generator().manual_seed(s))
        torch.testing.assert_close(loss[i], want, rtol=1e-5, atol=0)
        torch.testing.assert_close(nll[i], torch.stack([stats["nll_pos"], stats["nll_neg"]]), rtol=1e-5, atol=0)


def test_a_diverging_seed_is_named():
    images, labels = _data()
    models = [_model("hib", s) for s in SEEDS]
    with torch.no_grad():
        models[1].head.branches[0].weight.fill_(float("nan"))
    with pytest.raises(FloatingPointError, match=r"step 0 \(seed 2\)"):
        fit_seeds(models, SEEDS, images, labels, TrainConfig(steps=3, classes_per_batch=8, per_class=4, k=2),
                  progress=False)


@pytest.mark.parametrize("models, seeds, cfg, said", [
    (lambda: [_model("hib", 1)], (1, 2), {}, "one model per seed"),
    (lambda: [_model("hib", 1), _model("hib", 2)], (1, 1), {}, "must differ"),
    (lambda: [_model("hib", 1), build_model("hib", 2, 3)], (1, 2), {}, "built alike"),
    (lambda: [build_model("hib", 2, 2, components=2)] * 2, (1, 2), {}, "MoG-1"),
    (lambda: [_model("hib", 1), _model("hib", 2)], (1, 2), {"pairing": "two_stream"}, "all pairs"),
])
def test_fit_seeds_refuses_what_it_cannot_train(models, seeds, cfg, said):
    images, labels = _data()
    with pytest.raises(InputError, match=said):
        fit_seeds(models(), seeds, images, labels, TrainConfig(steps=2, classes_per_batch=8, per_class=4, **cfg),
                  progress=False)
