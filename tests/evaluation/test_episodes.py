"""Tests of hedgekit.evaluation.episodes with the prototype heads (SPE App. A.3, App. E): the episode sampler,
the clean/corrupt twins, determinism, and episodic training (`hedgekit.training.episodic`) end to end, on
hand-built embeddings whose episode accuracy is known exactly and on separable blobs."""
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from torch import nn

from hedgekit.data.samplers import EpisodeSampler
from hedgekit.embedding import Embedding
from hedgekit.errors import InputError
from hedgekit.evaluation.embedded import EmbeddedSet, embed_set
from hedgekit.evaluation.episodes import evaluate_episodes
from hedgekit.methods.fast.spe import SPE
from hedgekit.nets import INIT_VAR, EmbeddingNet, GaussianHead, PointHead, SoftMatch
from hedgekit.training.episodic import EpisodicConfig, fit_episodic

torch.set_num_threads(1)


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_episode_sampler_counts_disjointness_and_determinism():
    labels = np.repeat(np.array([3, 7, 11, 20, 42]), [9, 12, 10, 15, 8])
    sampler = EpisodeSampler(labels, n_classes=3, k_support=4, query_per_class=4, seed=5)
    for _ in range(50):
        ep = sampler.sample()
        assert len(ep.classes) == 3 and len(set(ep.classes)) == 3
        assert len(ep.support) == 12 and len(ep.query) == 12
        assert not set(ep.support) & set(ep.query)  # disjoint
        assert len(set(ep.support)) == 12 and len(set(ep.query)) == 12
        np.testing.assert_array_equal(np.bincount(ep.support_labels), [4, 4, 4])
        np.testing.assert_array_equal(np.bincount(ep.query_labels), [4, 4, 4])
        np.testing.assert_array_equal(labels[ep.support], ep.classes[ep.support_labels])
        np.testing.assert_array_equal(labels[ep.query], ep.classes[ep.query_labels])
    a = [EpisodeSampler(labels, 3, 4, 4, seed=1).sample() for _ in range(2)]
    b = EpisodeSampler(labels, 3, 4, 4, seed=1)
    c = EpisodeSampler(labels, 3, 4, 4, seed=2)
    e1, e2 = b.sample(), c.sample()
    np.testing.assert_array_equal(a[0].support, e1.support)
    np.testing.assert_array_equal(a[0].query, a[1].query)
    assert not (np.array_equal(e1.support, e2.support) and np.array_equal(e1.classes, e2.classes))
    full = EpisodeSampler(labels, None, 2, 3).sample()  # all classes
    np.testing.assert_array_equal(full.classes, [3, 7, 11, 20, 42])


def swapped_twin_set(n_cls=5, per_class=12, seed=0):
    """Clean embeddings: tight clusters at class centres. Corrupt twin: each class sits at the *next* class's
    centre. So clean/clean and corrupt/corrupt episodes are 100% right and mixed ones 0%."""
    g = gen(seed)
    centres = torch.arange(n_cls, dtype=torch.float32)[:, None] * torch.tensor([[10.0, 0.0]])
    labels = np.repeat(np.arange(n_cls), per_class)
    noise = torch.randn(len(labels), 2, generator=g) * 0.1
    clean = centres[labels] + noise
    corrupt = centres[(labels + 1) % n_cls] + noise
    var = torch.full_like(clean, 0.05)
    return EmbeddedSet(Embedding.gaussian(clean, var), Embedding.gaussian(corrupt, var), labels)


@pytest.mark.parametrize("head", [None, SPE(20, 2)])
def test_evaluate_episodes_selects_clean_and_corrupt_twins(head):
    data = swapped_twin_set()
    kw = dict(n_episodes=20, k_support=4, query_per_class=3, n_samples=20)
    assert evaluate_episodes(None, head, data, **kw)[0] == 1.0
    assert evaluate_episodes(None, head, data, support_corrupt=True, query_corrupt=True, **kw)[0] == 1.0
    assert evaluate_episodes(None, head, data, support_corrupt=True, **kw)[0] == 0.0
    assert evaluate_episodes(None, head, data, query_corrupt=True, **kw)[0] == 0.0


def test_evaluate_episodes_is_deterministic_and_reports_every_episode():
    labels = np.repeat(np.arange(6), 12)
    mean = torch.randn(len(labels), 2, generator=gen(1)) + torch.tensor(labels, dtype=torch.float32)[:, None] * 0.5
    noisy = EmbeddedSet(Embedding.gaussian(mean, torch.full_like(mean, 0.3)), None, labels)  # overlapping classes
    spe = SPE(20, 2)
    r1 = evaluate_episodes(None, spe, noisy, n_episodes=30, n_classes=4, k_support=2, query_per_class=5, seed=3)
    r2 = evaluate_episodes(None, spe, noisy, n_episodes=30, n_classes=4, k_support=2, query_per_class=5, seed=3)
    r3 = evaluate_episodes(None, spe, noisy, n_episodes=30, n_classes=4, k_support=2, query_per_class=5, seed=4)
    assert r1[0] == r2[0] and np.array_equal(r1[2], r2[2]) and not np.array_equal(r1[2], r3[2])
    assert r1[2].shape == (30,) and r1[0] == pytest.approx(r1[2].mean()) and r1[1] == pytest.approx(r1[2].std())
    assert set(np.round(r1[2] * 20).astype(int)) <= set(range(21))  # 4 classes x 5 queries per episode


# ----------------------------------------------------------------------------- episodic training


class TinyMLP(nn.Module):
    def __init__(self, features=10, hidden=32):
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(features, hidden), nn.ReLU(),
                                 nn.Linear(hidden, hidden), nn.ReLU())
        self.out_features = hidden

    def forward(self, x):
        return self.net(x)


def tiny_model(kind, features=10, dim=2):
    body = TinyMLP(features)
    if kind == "point":
        head = PointHead(body.out_features, dim)
    else:
        head = GaussianHead(body.out_features, dim, 1, INIT_VAR)
    return EmbeddingNet(body, head, SoftMatch(), dict(kind=kind, in_channels=1, height=1, width=features))


def blobs(n_per_class, n_cls=12, features=10, seed=0, centre_seed=0):
    centres = np.random.default_rng(centre_seed).normal(0, 1.0, (n_cls, features))
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(n_cls), n_per_class)
    x = centres[labels] + rng.normal(0, 0.6, (len(labels), features))
    corrupt = x.copy()
    corrupt[:, : features // 2] = 0  # "occlude" half of the features
    # squashed into [0, 1]: EmbeddingNet takes images (pixels in [0, 1]) only
    as_img = lambda a: torch.sigmoid(torch.tensor(a, dtype=torch.float32)).reshape(len(a), 1, 1, features)
    return SimpleNamespace(images=as_img(x), corrupt=as_img(corrupt), labels=labels)


@pytest.mark.parametrize("kind, precision", [("pn", "float32"), ("spe", "float32"), ("spe", "bfloat16")])
def test_tiny_episodic_training_beats_chance(kind, precision):
    train, test = blobs(40, seed=1), blobs(30, seed=2)
    model = tiny_model("point" if kind == "pn" else "hib")
    cfg = EpisodicConfig(steps=300, n_classes=8, k_support=3, query_per_class=3, lr=3e-3, log_every=100,
                         precision=precision)
    head = SPE.for_episodes(cfg.n_classes, cfg.k_support, 2) if kind == "spe" else None
    gamma0 = None if head is None else head.gamma.item()
    body_dtypes = set()
    hook = model.body.register_forward_hook(lambda module, inputs, output: body_dtypes.add(output.dtype))
    hist = fit_episodic(model, head, train.images, torch.tensor(train.labels), cfg, seed=0, progress=False)
    hook.remove()
    assert body_dtypes == {getattr(torch, precision)}  # the body ran in the precision asked for
    assert hist.rows[-1]["loss"] < hist.rows[0]["loss"] and hist.seconds > 0
    if head is not None:
        assert head.gamma.item() != gamma0 and "sigma_eps2" in hist.rows[-1]  # sigma_eps is learned
    data = embed_set(model, test, eta=False)
    acc, _, _ = evaluate_episodes(None, head, data, n_episodes=50, k_support=5, query_per_class=10, n_samples=50)
    assert acc > 0.6  # 12-way: chance is 0.083
    acc_corrupt_query, _, _ = evaluate_episodes(None, head, data, n_episodes=50, k_support=5, query_per_class=10,
                                                query_corrupt=True, n_samples=50)
    assert acc_corrupt_query < acc


def test_fit_episodic_is_deterministic_for_a_seed():
    train = blobs(20, n_cls=6, seed=1)
    cfg = EpisodicConfig(steps=20, n_classes=4, k_support=2, query_per_class=2, log_every=5)
    runs = []
    for _ in range(2):
        torch.manual_seed(0)  # same initial weights
        model, head = tiny_model("hib"), SPE(8, 2)
        runs.append(fit_episodic(model, head, train.images, train.labels, cfg, seed=4, progress=False).rows)
    assert [r["loss"] for r in runs[0]] == [r["loss"] for r in runs[1]]


def test_input_errors():
    support = Embedding.gaussian(torch.randn(6, 2), torch.ones(6, 2))
    with pytest.raises(InputError, match="too few instances"):
        EpisodeSampler(np.repeat([0, 1, 2], [10, 10, 3]), n_classes=3, k_support=2, query_per_class=2)
    with pytest.raises(InputError, match="n_classes must be in"):
        EpisodeSampler(np.repeat([0, 1], 10), n_classes=3)
    no_twin = EmbeddedSet(support, None, np.arange(6) % 2)
    with pytest.raises(InputError, match="no corrupt twin"):
        evaluate_episodes(None, None, no_twin, n_episodes=1, k_support=1, query_per_class=1, query_corrupt=True)
    with pytest.raises(InputError, match="sampler must be"):
        EpisodicConfig(sampler="gibbs")
    with pytest.raises(InputError, match="labels"):
        fit_episodic(tiny_model("point"), None, torch.zeros(4, 1, 1, 10), np.zeros(3, dtype=int), progress=False)
