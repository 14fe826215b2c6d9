"""Tests of hedgekit.papers.spe.lesson (the SPE lessons of notebooks 06-07).

Oracles: pixel counts of the occluded square and an untouched outside; the augmentation's hit rate against
its probability; hand-built embeddings whose episode accuracies are known exactly (separated classes, a
corrupt twin that sits on another class), and a naive second implementation of the mixed episodes.
"""
import numpy as np
import pytest
import torch

from hedgekit.data.samplers import EpisodeSampler
from hedgekit.embedding import Embedding
from hedgekit.errors import InputError
from hedgekit.methods.pn import PN, pn_log_posterior, pn_prototypes
from hedgekit.methods.fast.spe import SPE
from hedgekit.papers.spe.lesson import mixed_support_accuracy, occlude_squares, square_occlusion


# ------------------------------------------------------------------------------------- occlusion
@pytest.mark.parametrize("side, size, expect", [(0.6, 32, 19), (0.5, 20, 10), (1.0, 16, 16)])
def test_occlude_squares_blacks_out_one_square_and_nothing_else(side, size, expect):
    x = torch.rand(6, 3, size, size) + 0.1  # no zero pixels before
    out = occlude_squares(x, np.random.default_rng(0), side)
    zero = (out == 0).all(1)  # (B, H, W): all channels black
    for img_zero in zero:
        rows, cols = torch.nonzero(img_zero, as_tuple=True)
        assert len(rows) == expect * expect  # one s x s square
        assert rows.max() - rows.min() + 1 == expect and cols.max() - cols.min() + 1 == expect
    torch.testing.assert_close(out[~zero.unsqueeze(1).expand_as(out)], x[~zero.unsqueeze(1).expand_as(x)])
    assert (x > 0).all()  # the input is not modified


def test_occlude_squares_positions_cover_the_image_and_follow_the_seed():
    x = torch.ones(400, 1, 10, 10)
    out = occlude_squares(x, np.random.default_rng(1), 0.5)
    tops = torch.stack([torch.nonzero((o[0] == 0).any(1))[:, 0].min() for o in out])
    assert set(tops.tolist()) == set(range(6))  # every top position 0..10-5 occurs
    torch.testing.assert_close(out, occlude_squares(x, np.random.default_rng(1), 0.5))


@pytest.mark.parametrize("p", [0.0, 0.3, 1.0])
def test_square_occlusion_hits_with_its_probability(p):
    x = torch.ones(2000, 3, 8, 8)
    out = square_occlusion(p, 0.5)(x, np.random.default_rng(2))
    hit = (out == 0).flatten(1).any(1).float().mean().item()
    assert abs(hit - p) < 4 * np.sqrt(p * (1 - p) / len(x)) + 1e-9
    assert (x == 1).all()


@pytest.mark.parametrize("bad", [dict(images=torch.ones(3, 8, 8)), dict(side=0.0), dict(side=1.5), dict(rng=0)])
def test_occlude_squares_rejects_bad_input(bad):
    kw = dict(images=torch.ones(2, 1, 8, 8), rng=np.random.default_rng(0), side=0.5) | bad
    with pytest.raises(InputError):
        occlude_squares(**kw)


@pytest.mark.parametrize("kw", [dict(p_occlude=-0.1), dict(p_occlude=1.2), dict(side=0.0)])
def test_square_occlusion_rejects_bad_settings(kw):
    with pytest.raises(InputError):
        square_occlusion(**kw)


# ------------------------------------------------------------------------------ mixed support
def _toy(n_classes=4, per_class=20, corrupt_var=100.0):
    """Classes at distance 10 apart on a line, tiny spread; every corrupt twin sits on class 0's spot."""
    labels = np.repeat(np.arange(n_classes), per_class)
    g = torch.Generator().manual_seed(0)
    mean = torch.stack([torch.as_tensor(labels * 10.0), torch.zeros(len(labels))], 1).float()
    mean = mean + 0.01 * torch.randn(mean.shape, generator=g)
    clean = Embedding.gaussian(mean, torch.full_like(mean, 1e-3))
    bad_mean = torch.zeros_like(mean) - 30.0  # far left of every class: drags a mean prototype away
    corrupt = Embedding.gaussian(bad_mean, torch.full_like(mean, corrupt_var))
    return clean, corrupt, labels


def test_clean_support_classifies_separated_classes_perfectly():
    clean, corrupt, labels = _toy()
    for head in (None, PN(), SPE(8, 2)):
        acc, se = mixed_support_accuracy(head, clean, corrupt, labels, 0, k_support=2, n_episodes=5)
        assert acc == 1.0 and se == 0.0


def test_pn_rule_is_dragged_by_corrupt_support_and_spe_is_not():
    """k = 2, one corrupt: a PN prototype of class c sits at (10c - 30) / 2, so queries of class c fall to the
    class whose prototype is nearest; SPE weights the corrupt item by ~1e-2 and stays near perfect."""
    clean, corrupt, labels = _toy()
    pn_acc, _ = mixed_support_accuracy(None, clean, corrupt, labels, 1, k_support=2, n_episodes=20)
    spe = SPE(8, 2)
    with torch.no_grad():
        spe.gamma.fill_(-5.0)  # sigma_eps^2 = softplus(-5) ~ 0.0067
    spe_acc, _ = mixed_support_accuracy(spe, clean, corrupt, labels, 1, k_support=2, n_episodes=20)
    # PN prototypes: -15, -10, -5, 0 for classes 0..3; queries 0, 10, 20, 30 -> nearest is class 3 for all
    assert pn_acc == pytest.approx(0.25)
    assert spe_acc == 1.0


def test_mixed_support_matches_a_naive_implementation():
    g = torch.Generator().manual_seed(3)
    labels = np.repeat(np.arange(5), 12)
    clean = Embedding.gaussian(torch.randn(60, 2, generator=g) + torch.as_tensor(labels)[:, None].float(),
                               torch.zeros(60, 2))
    corrupt = Embedding.gaussian(torch.randn(60, 2, generator=g) * 3, torch.zeros(60, 2))
    acc, se = mixed_support_accuracy(None, clean, corrupt, labels, 2, k_support=3, query_per_class=4,
                                     n_episodes=30, n_classes=4, seed=7)
    episodes, accs = EpisodeSampler(labels, 4, 3, 4, 7), []
    for _ in range(30):
        ep = episodes.sample()
        z = []
        for j, i in enumerate(ep.support):
            z.append(corrupt.mean[i, 0] if j % 3 < 2 else clean.mean[i, 0])
        protos = pn_prototypes(torch.stack(z), torch.as_tensor(ep.support_labels), 4)
        pred = pn_log_posterior(clean.mean[ep.query, 0], protos).argmax(1).numpy()
        accs.append((pred == ep.query_labels).mean())
    assert acc == pytest.approx(np.mean(accs))
    assert se == pytest.approx(np.std(accs, ddof=1) / np.sqrt(30))


@pytest.mark.parametrize("kw", [dict(n_corrupt=5), dict(n_corrupt=-1), dict(n_corrupt=1.0), dict(k_support=0),
                                dict(labels=np.zeros(3, int)), dict(corrupt="x")])
def test_mixed_support_rejects_bad_input(kw):
    clean, corrupt, labels = _toy()
    args = dict(head=None, clean=clean, corrupt=corrupt, labels=labels, n_corrupt=1, k_support=4) | kw
    with pytest.raises(InputError):
        mixed_support_accuracy(**args)


def test_mixed_support_rejects_twins_of_other_images():
    clean, corrupt, labels = _toy()
    with pytest.raises(InputError):
        mixed_support_accuracy(None, clean, corrupt[torch.arange(10)], labels, 1)
