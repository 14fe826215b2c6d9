"""Oracle tests of hedgekit.methods.het_triplet and its miners, hedgekit.methods.mining (Taha et al. 2019, eq. 2-4,
8, 11), and the "het" head.

Oracles: hand-computed soft and hard margins, closed-form optima of eq. 11 (e^s = L for a fixed
L_tri; e^s_i = mean L_tri over the triplets holding image i), explicit Python loops over all
(a, p, n) for batch-hard and semi-hard mining and for eq. 11 itself, and autograd.
"""
import math

import pytest
import torch

from hedgekit.embedding import Embedding
from hedgekit.errors import InputError
from hedgekit.methods.het_triplet import (SEMI_HARD_WINDOW, heteroscedastic_triplet_loss, pairwise_distances,
                                          triplet_batch_loss, triplet_loss, uncertainty, z_and_log_var)
from hedgekit.methods.mining import batch_all_triplets, batch_hard_triplets, semi_hard_triplets
from hedgekit.nets.embedder import build_conv_model, build_model, model_from_config
from hedgekit.nets.heads import HeteroscedasticHead


def _batch(seed, sizes=(3, 3, 4, 2), dim=3, dtype=torch.float64):
    """Random embeddings of classes with the given sizes (continuous: no distance ties)."""
    g = torch.Generator().manual_seed(seed)
    labels = torch.repeat_interleave(torch.arange(len(sizes)), torch.tensor(sizes))
    labels = labels[torch.randperm(len(labels), generator=g)]
    return torch.randn(len(labels), dim, generator=g, dtype=dtype), labels


def _brute_batch_hard(d, y):
    out = []
    for a in range(len(y)):
        p_best = n_best = None
        for i in range(len(y)):
            if i != a and y[i] == y[a] and (p_best is None or d[a][i] > d[a][p_best]):
                p_best = i
            if y[i] != y[a] and (n_best is None or d[a][i] < d[a][n_best]):
                n_best = i
        if p_best is not None and n_best is not None:
            out.append((a, p_best, n_best))
    return out


def _brute_semi_hard(d, y, m):
    out = []
    for a in range(len(y)):
        for p in range(len(y)):
            if p == a or y[p] != y[a]:
                continue
            best = None
            for n in range(len(y)):
                if y[n] != y[a] and d[a][p] < d[a][n] < d[a][p] + m and (best is None or d[a][n] < d[a][best]):
                    best = n
            if best is not None:
                out.append((a, p, best))
    return out


def _brute_batch_all(y):
    return [(a, p, n) for a in range(len(y)) for p in range(len(y)) for n in range(len(y))
            if p != a and y[p] == y[a] and y[n] != y[a]]


def _triplets(idx):
    return list(zip(*(t.tolist() for t in idx)))


def _softplus(x):
    return math.log1p(math.exp(x))


# --------------------------------------------------------------------------- distances
def test_pairwise_distances_are_euclidean_with_zero_diagonal():
    z, _ = _batch(0)
    d = pairwise_distances(z)
    for i in range(len(z)):
        for j in range(len(z)):
            assert d[i, j].item() == pytest.approx(math.dist(z[i].tolist(), z[j].tolist()), rel=1e-12)
    assert torch.equal(d.diagonal(), torch.zeros(len(z), dtype=z.dtype))


def test_pairwise_distances_gradient_is_finite_where_points_coincide():
    z = torch.tensor([[0.0, 0.0], [0.0, 0.0], [3.0, 4.0]], requires_grad=True)  # rows 0 and 1 coincide
    d = pairwise_distances(z)
    assert d[0, 1].item() == 0 and d[0, 2].item() == pytest.approx(5.0)
    d.sum().backward()
    assert torch.isfinite(z.grad).all()
    # only the distances of 5 pull (each counted twice in the sum): d/dz_0 2 ||z_0 - z_2|| = 2 (z_0 - z_2) / 5
    expected = torch.tensor([[-1.2, -1.6], [-1.2, -1.6], [2.4, 3.2]])
    assert torch.allclose(z.grad, expected, atol=1e-6)


def test_pairwise_distances_gradcheck_away_from_zero():
    z, _ = _batch(1, sizes=(2, 2))
    assert torch.autograd.gradcheck(lambda t: pairwise_distances(t), (z.requires_grad_(),))


# --------------------------------------------------------------------------- mining
@pytest.mark.parametrize("seed", range(6))
def test_batch_hard_matches_brute_force_loop(seed):
    z, y = _batch(seed, sizes=(3, 4, 1, 2, 3))  # the singleton class has no positive: its anchor is dropped
    d = pairwise_distances(z)
    expected = _brute_batch_hard(d.tolist(), y.tolist())
    assert _triplets(batch_hard_triplets(d, y)) == expected
    assert len(expected) == len(y) - 1


@pytest.mark.parametrize("seed", range(6))
def test_semi_hard_matches_brute_force_loop(seed):
    z, y = _batch(seed, sizes=(3, 4, 1, 2, 3), dim=2)
    d = pairwise_distances(z)
    got = _triplets(semi_hard_triplets(d, y, margin=0.5))
    assert got == _brute_semi_hard(d.tolist(), y.tolist(), 0.5)


@pytest.mark.parametrize("seed", range(3))
def test_batch_all_matches_brute_force_loop(seed):
    z, y = _batch(seed, sizes=(3, 4, 1, 2, 3))
    expected = _brute_batch_all(y.tolist())
    assert _triplets(batch_all_triplets(pairwise_distances(z), y)) == expected
    # sum over anchors of (class size - 1) x (images of other classes)
    assert len(expected) == sum(k * (k - 1) * (len(y) - k) for k in (3, 4, 1, 2, 3))


def test_semi_hard_oracle_covers_dropped_pairs_and_several_candidates():
    """Across the seeds above some pairs have no semi-hard negative and some have several."""
    dropped = several = 0
    for seed in range(6):
        z, y = _batch(seed, sizes=(3, 4, 1, 2, 3), dim=2)
        d, y = pairwise_distances(z).tolist(), y.tolist()
        for a in range(len(y)):
            for p in range(len(y)):
                if p != a and y[p] == y[a]:
                    k = sum(y[n] != y[a] and d[a][p] < d[a][n] < d[a][p] + 0.5 for n in range(len(y)))
                    dropped += k == 0
                    several += k > 1
    assert dropped > 0 and several > 0


def test_mining_ties_go_to_the_lowest_index():
    # points on a line: anchor 0 at x=0; positives 1, 2 both at distance 2; negatives 3, 4 both at distance 1
    z = torch.tensor([[0.0], [2.0], [-2.0], [1.0], [-1.0]], dtype=torch.float64)
    y = torch.tensor([0, 0, 0, 1, 1])
    a, p, n = batch_hard_triplets(pairwise_distances(z), y)
    assert (a[0].item(), p[0].item(), n[0].item()) == (0, 1, 3)
    assert _triplets((a, p, n)) == _brute_batch_hard(pairwise_distances(z).tolist(), y.tolist())
    z2 = torch.tensor([[0.0], [1.0], [2.0], [-2.0], [5.0]], dtype=torch.float64)  # d_ap = 1; negatives 2, 3 at 2
    got = _triplets(semi_hard_triplets(pairwise_distances(z2), torch.tensor([0, 0, 1, 1, 1]), margin=1.5))
    assert (0, 1, 2) in got
    assert got == _brute_semi_hard(pairwise_distances(z2).tolist(), [0, 0, 1, 1, 1], 1.5)


def test_mining_uses_strict_inequalities_of_eq3():
    z = torch.tensor([[0.0], [1.0], [1.0 + 1e-9], [2.0]], dtype=torch.float64)
    y = torch.tensor([0, 0, 1, 1])
    d = pairwise_distances(z)
    # for (0, 1): d_ap = 1; negative 2 at 1 + 1e-9 is semi-hard with m = 1, negative 3 at exactly 1 + m is not
    assert (0, 1, 2) in _triplets(semi_hard_triplets(d, y, margin=1.0))
    d_eq = torch.tensor([[0.0, 1.0, 1.0, 2.0], [1.0, 0.0, 2.0, 1.0], [1.0, 2.0, 0.0, 1.0], [2.0, 1.0, 1.0, 0.0]])
    assert (0, 1) not in [t[:2] for t in _triplets(semi_hard_triplets(d_eq, y, margin=1.0))]


# --------------------------------------------------------------------------- L_tri
def test_soft_margin_hand_case():
    d_ap, d_an = torch.tensor([1.0, 2.0, 0.0]), torch.tensor([3.0, 0.5, 0.0])
    expected = [math.log(1 + math.exp(-2.0)), math.log(1 + math.exp(1.5)), math.log(2.0)]
    assert triplet_loss(d_ap, d_an).tolist() == pytest.approx(expected, rel=1e-6)
    big = triplet_loss(torch.tensor([200.0]), torch.tensor([0.0]))  # no overflow: softplus(200) = 200
    assert big.item() == pytest.approx(200.0)


def test_hard_margin_hand_case():
    d_ap, d_an = torch.tensor([1.0, 1.0, 2.0, 0.0]), torch.tensor([3.0, 1.5, 1.0, 1.0])
    assert triplet_loss(d_ap, d_an, margin=1.0).tolist() == pytest.approx([0.0, 0.5, 2.0, 0.0])
    assert triplet_loss(d_ap, d_an, margin=0.2).tolist() == pytest.approx([0.0, 0.0, 1.2, 0.0])


# --------------------------------------------------------------------------- eq. 11
def _eq11_loop(z, s, y, margin=None, mining="batch_hard", m_semi=SEMI_HARD_WINDOW):
    d = pairwise_distances(z).tolist()
    ts = {"batch_hard": lambda: _brute_batch_hard(d, y.tolist()), "batch_all": lambda: _brute_batch_all(y.tolist()),
          "semi_hard": lambda: _brute_semi_hard(d, y.tolist(), m_semi)}[mining]()
    total = 0.0
    for a, p, n in ts:
        x = d[a][p] - d[a][n]
        l_tri = _softplus(x) if margin is None else max(0.0, margin + x)
        total += sum(math.exp(-s[i]) for i in (a, p, n)) * l_tri / 2 + (s[a] + s[p] + s[n]) / 2
    return total / len(ts)


@pytest.mark.parametrize("mining, margin", [("batch_hard", None), ("batch_hard", 0.5), ("semi_hard", None),
                                            ("semi_hard", 0.8), ("batch_all", None), ("batch_all", 0.5)])
def test_eq11_equals_explicit_loop(mining, margin):
    for seed in range(3):
        z, y = _batch(seed, sizes=(4, 4, 4))
        s = torch.randn(len(y), generator=torch.Generator().manual_seed(seed + 10), dtype=z.dtype)
        loss, stats = heteroscedastic_triplet_loss(z, s, y, mining=mining, margin=margin)
        m_semi = SEMI_HARD_WINDOW if margin is None else margin
        assert loss.item() == pytest.approx(_eq11_loop(z, s.tolist(), y, margin, mining, m_semi), rel=1e-10)
        assert stats["sigma2"] == pytest.approx(s.exp().mean().item())


@pytest.mark.parametrize("mining", ["batch_hard", "semi_hard", "batch_all"])
@pytest.mark.parametrize("margin", [None, 1.0])
def test_eq11_with_s_zero_is_three_halves_of_mean_triplet_loss(mining, margin):
    z, y = _batch(3, sizes=(4, 4, 4, 4), dim=2)
    loss, stats = heteroscedastic_triplet_loss(z, torch.zeros(len(y), dtype=z.dtype), y, mining, margin)
    base, base_stats = triplet_batch_loss(z, y, mining, margin)
    assert stats["triplets"] > 0
    assert loss.item() == pytest.approx(1.5 * base.item(), rel=1e-12)
    assert base.item() == pytest.approx(float(stats["triplet"]), rel=1e-6) and base_stats["triplet"] == stats["triplet"]


def _three_points(h):
    """a = (-1, 0), p = (1, 0) of class 0 and n = (0, h) of class 1: both mined triplets share one L_tri."""
    z = torch.tensor([[-1.0, 0.0], [1.0, 0.0], [0.0, h]], dtype=torch.float64)
    return z, torch.tensor([0, 0, 1]), _softplus(2.0 - math.sqrt(1 + h * h))


@pytest.mark.parametrize("h", [0.3, 1.0, 1.7, 4.0])  # L_tri from ~1.7 down to ~0.1
def test_per_image_optimum_is_sigma2_equal_to_L(h):
    z, y, big_l = _three_points(h)
    s = torch.full((3,), math.log(big_l), dtype=torch.float64, requires_grad=True)
    loss, stats = heteroscedastic_triplet_loss(z, s, y)
    assert stats["triplets"] == 2 and stats["triplet"] == pytest.approx(big_l)
    (grad,) = torch.autograd.grad(loss, s)
    assert grad.abs().max().item() < 1e-12
    best = loss.item()
    for i in range(3):
        for step in (-0.1, 0.1):
            shifted = s.detach().clone()
            shifted[i] += step
            assert heteroscedastic_triplet_loss(z, shifted, y)[0].item() > best
    for step in (-0.1, 0.1):
        assert heteroscedastic_triplet_loss(z, s.detach() + step, y)[0].item() > best


@pytest.mark.parametrize("seed", range(3))
def test_per_image_optimum_in_a_batch_is_mean_L_of_its_triplets(seed):
    """d/ds_i of eq. 11 vanishes at e^s_i = mean of L_tri over the mined triplets holding image i."""
    z, y = _batch(seed, sizes=(4, 4, 4))
    ts = _brute_batch_hard(pairwise_distances(z).tolist(), y.tolist())
    d = pairwise_distances(z).tolist()
    sums, counts = [0.0] * len(y), [0] * len(y)
    for a, p, n in ts:
        for i in (a, p, n):
            sums[i] += _softplus(d[a][p] - d[a][n])
            counts[i] += 1
    s_opt = torch.tensor([math.log(sums[i] / counts[i]) if counts[i] else 0.0 for i in range(len(y))],
                         dtype=z.dtype, requires_grad=True)
    (grad,) = torch.autograd.grad(heteroscedastic_triplet_loss(z, s_opt, y)[0], s_opt)
    assert grad.abs().max().item() < 1e-12
    s_bad = (s_opt.detach() + 0.3).requires_grad_()
    (grad_bad,) = torch.autograd.grad(heteroscedastic_triplet_loss(z, s_bad, y)[0], s_bad)
    assert (grad_bad[torch.tensor(counts) > 0] > 0).all()  # too uncertain everywhere: descent lowers every s


def test_gradients_reach_s_and_the_mean():
    z, y = _batch(4, sizes=(4, 4, 4))
    z.requires_grad_()
    s = torch.zeros(len(y), dtype=z.dtype, requires_grad=True)
    heteroscedastic_triplet_loss(z, s, y)[0].backward()
    assert torch.isfinite(z.grad).all() and z.grad.abs().sum() > 0
    assert torch.isfinite(s.grad).all() and (s.grad != 0).any()


def test_gradients_reach_every_head_output_through_a_het_model():
    torch.manual_seed(0)
    model = build_model("het", n_digits=1, dim=4)
    x = torch.rand(12, 1, 28, 28, generator=torch.Generator().manual_seed(0))
    y = torch.arange(3).repeat_interleave(4)
    loss, stats = heteroscedastic_triplet_loss(*z_and_log_var(model(x)), y)
    loss.backward()
    w = model.head.linear.weight.grad
    assert w[:4].abs().sum() > 0 and w[4].abs().sum() > 0  # embedding rows and the s row
    assert model.head.linear.bias.grad[4] != 0
    assert stats["triplets"] == 12 and 0 <= stats["active"] <= 1


def test_z_and_log_var_reads_a_het_embedding_and_uncertainty_is_exp_s():
    z, y = _batch(5, sizes=(3, 3, 3), dtype=torch.float32)
    s = torch.linspace(-1, 1, len(y))
    emb = Embedding.gaussian(z, s.exp().unsqueeze(1), uncertainty=s.exp())
    z_read, s_read = z_and_log_var(emb)
    assert torch.equal(z_read, z) and torch.allclose(s_read, s, atol=1e-6)
    a, _ = heteroscedastic_triplet_loss(z_read, s_read, y)
    b, _ = heteroscedastic_triplet_loss(z, s, y)
    assert a.item() == pytest.approx(b.item(), rel=1e-5)
    assert torch.allclose(uncertainty(emb), s.exp())


def test_semi_hard_with_no_qualifying_negative_gives_zero_loss_with_graph():
    z = torch.tensor([[0.0, 0.0], [0.1, 0.0], [10.0, 0.0], [10.1, 0.0]], requires_grad=True)
    y = torch.tensor([0, 0, 1, 1])
    s = torch.zeros(4, requires_grad=True)
    loss, stats = heteroscedastic_triplet_loss(z, s, y, mining="semi_hard", margin=1.0)
    assert loss.item() == 0 and stats["triplets"] == 0
    loss.backward()
    assert torch.equal(s.grad, torch.zeros(4))


def test_active_fraction_counts_violated_triplets():
    z = torch.tensor([[0.0], [1.0], [3.0], [0.5]], dtype=torch.float64)  # anchor 0: p = 1 (d 1), n = 3 (d 0.5)
    y = torch.tensor([0, 0, 1, 1])
    _, st = triplet_batch_loss(z, y)
    # batch-hard triplets: (0,1,3) violated; (1,0,3) d_ap 1 > d_an 0.5 violated; (2,3,1) 2.5 vs 2 violated;
    # (3,2,0) d_ap 2.5 > d_an 0.5 violated
    assert st["active"] == 1.0 and st["triplets"] == 4
    z2 = torch.tensor([[0.0], [0.1], [5.0], [5.1]], dtype=torch.float64)
    assert triplet_batch_loss(z2, y)[1]["active"] == 0.0
    assert triplet_batch_loss(z2, y, margin=10.0)[1]["active"] == 1.0  # within the hard margin


# --------------------------------------------------------------------------- head and model
def test_het_head_outputs_isotropic_exp_s():
    head = HeteroscedasticHead(6, dim=3)
    h = torch.randn(5, 6, generator=torch.Generator().manual_seed(0))
    emb = head(h)
    out = h @ head.linear.weight.T + head.linear.bias
    assert torch.allclose(emb.mean[:, 0], out[:, :3])
    assert torch.allclose(emb.var[:, 0], out[:, 3:].exp().expand(5, 3))
    assert torch.allclose(emb.uncertainty, out[:, 3].exp()) and torch.allclose(uncertainty(emb), emb.uncertainty)
    assert torch.allclose(emb.var.log()[:, 0, 0], out[:, 3], atol=1e-6)  # log var recovers s
    start = HeteroscedasticHead(6, 3, init_var=0.25)(torch.zeros(2, 6))
    assert torch.allclose(start.uncertainty, torch.full((2,), 0.25))


def test_build_model_het_kind():
    model = build_model("het", n_digits=2, dim=5)
    emb = model(torch.rand(3, 1, 28, 56))
    assert emb.mean.shape == (3, 1, 5) and emb.uncertainty.shape == (3,) and not emb.is_point
    assert isinstance(model_from_config(model.config).head, HeteroscedasticHead)
    assert isinstance(build_conv_model("het", dim=2, in_channels=1, height=28, width=28, blocks=3).head,
                      HeteroscedasticHead)
    with pytest.raises(InputError, match="het models have exactly one component"):
        build_model("het", components=2)


# --------------------------------------------------------------------------- bad inputs
# The losses and miners compute their equations unchecked: their settings are checked by
# TripletConfig, the training set and the model where fit_triplets starts (tests/training/test_triplets.py). The
# readers of a het Embedding a user passes stay entry points:
def test_non_het_embeddings_are_rejected():
    z, y = _batch(0, sizes=(3, 3), dtype=torch.float32)
    with pytest.raises(InputError, match=r"isotropic variance sigma\^2 > 0 per input \(build_model\('het'\)\)"):
        z_and_log_var(Embedding.point(z))
    with pytest.raises(InputError, match=r"isotropic variance"):
        uncertainty(Embedding.gaussian(z, torch.rand(6, 3) + 0.1))
    with pytest.raises(InputError, match="one Gaussian per input"):
        uncertainty(Embedding.mixture(z.unsqueeze(1).repeat(1, 2, 1), torch.ones(6, 2, 3)))


# ------------------------------------------------------------------ the CPU path (the masked forms: tests/methods/fast)
def _selected_losses(z, s, y, mining, margin):
    """The plain form, the losses' path on the CPU: the miner selects the triplets (`batch_hard_triplets`,
    `semi_hard_triplets`), and the losses are plain means over them (eq. 2 and eq. 11)."""
    d = pairwise_distances(z)
    if mining == "batch_hard":
        a, p, n = batch_hard_triplets(d.detach(), y)
    else:
        a, p, n = semi_hard_triplets(d.detach(), y, SEMI_HARD_WINDOW if margin is None else margin)
    l_tri = triplet_loss(d[a, p], d[a, n], margin)
    per = 0.5 * ((-s[a]).exp() + (-s[p]).exp() + (-s[n]).exp()) * l_tri + 0.5 * (s[a] + s[p] + s[n])
    return l_tri.mean(), per.mean(), len(a)


def test_on_the_cpu_the_losses_select_their_triplets_as_every_recorded_result_was_trained():
    z, y = _batch(3, sizes=(4,) * 6, dtype=torch.float32)
    s = 0.3 * torch.randn(len(y), generator=torch.Generator().manual_seed(3))
    for mining in ("batch_hard", "semi_hard"):
        loss, stats = triplet_batch_loss(z, y, mining=mining)
        het, _ = heteroscedastic_triplet_loss(z, s, y, mining=mining)
        assert isinstance(stats["triplets"], int)  # selected: a count of triplets, not a weight
        assert (loss, het, stats["triplets"]) == _selected_losses(z, s, y, mining, None)  # bit for bit
