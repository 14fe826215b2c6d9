"""hedgekit.data.subsets: label noise (independent and image-dependent), blended look-alikes, the clean posterior."""
import numpy as np
import pytest

from hedgekit.data.subsets import (AMBIGUITY_FLIPS, FASHION_LOOKALIKES, ambiguity_levels, ambiguity_noise,
                                   clean_posterior, flip_probabilities, lookalike_noise, overlay_lookalikes,
                                   posterior_targets, uncertainty_noise)
from hedgekit.errors import InputError

GROUPS = FASHION_LOOKALIKES
GROUP_OF = {c: g for g in GROUPS for c in g}


def _probs(n, seed=0, classes=10):
    """Hand-made posteriors: a Dirichlet draw per item with a random concentration (so confidence varies)."""
    rng = np.random.default_rng(seed)
    conc = rng.uniform(0.05, 3.0, n)[:, None]
    return rng.gamma(conc * np.ones((n, classes))) + 1e-12


# --------------------------------------------------------------------------- flip_probabilities
def test_flip_probabilities_closed_form_power_one():
    """power 1 and rate <= 1/2: p_i = rate q_i / mean(q) = 2 rate n / (n + 1) q_i (no clipping), q_i = rank / n."""
    score = np.random.default_rng(1).normal(size=400)
    q = (np.argsort(np.argsort(score)) + 1) / 400
    np.testing.assert_allclose(flip_probabilities(score, 0.3, power=1.0), 0.6 * 400 / 401 * q, atol=1e-9)


@pytest.mark.parametrize("rate,power", [(0.05, 2.0), (0.54, 2.0), (0.9, 3.0), (0.3, 0.5)])
def test_flip_probabilities_mean_monotone_and_ties(rate, power):
    score = np.round(np.random.default_rng(2).normal(size=1000), 1)  # many ties
    p = flip_probabilities(score, rate, power)
    assert p.mean() == pytest.approx(rate, abs=1e-9) and p.min() >= 0 and p.max() <= 1
    order = np.argsort(score, kind="stable")
    assert np.all(np.diff(p[order]) >= -1e-15)  # non-decreasing in the score
    for v in np.unique(score):  # equal scores, equal probabilities
        assert np.ptp(p[score == v]) == 0


def test_flip_probabilities_power_concentrates():
    score = np.arange(1000.0)
    top = score >= 900
    assert flip_probabilities(score, 0.3, 3.0)[top].sum() > flip_probabilities(score, 0.3, 1.0)[top].sum()


@pytest.mark.parametrize("kw", [dict(score=[]), dict(score=[1.0, np.nan]), dict(rate=1.5), dict(power=0.0)])
def test_flip_probabilities_bad_input(kw):
    args = dict(score=[1.0, 2.0], rate=0.5, power=2.0) | kw
    with pytest.raises(InputError):
        flip_probabilities(**args)


# --------------------------------------------------------------------------- uncertainty_noise
def test_uncertainty_noise_rate_groups_target_and_determinism():
    n = 20000
    y = np.random.default_rng(3).integers(0, 10, n)
    probs = _probs(n)
    noisy = uncertainty_noise(y, probs, rate=0.38, seed=4)
    # rate of ALL labels, within 3 binomial standard errors
    assert noisy.rate == pytest.approx(0.38, abs=3 * np.sqrt(0.38 * 0.62 / n))
    f = np.flatnonzero(noisy.flipped)
    assert np.array_equal(noisy.true, y) and np.array_equal(noisy.labels != y, noisy.flipped)
    assert not np.isin(y[f], (1, 8)).any()  # trousers and bags never flip
    assert all(noisy.labels[i] in GROUP_OF[int(y[i])] for i in f)
    for i in f[:500]:  # to the group's most probable other class (brute force)
        others = [c for c in GROUP_OF[int(y[i])] if c != y[i]]
        assert noisy.labels[i] == max(others, key=lambda c: probs[i, c])
    again = uncertainty_noise(y, probs, rate=0.38, seed=4)
    assert np.array_equal(again.labels, noisy.labels)
    assert not np.array_equal(uncertainty_noise(y, probs, rate=0.38, seed=5).labels, noisy.labels)


def test_uncertainty_noise_flips_follow_the_oracle_probability():
    """Monte Carlo: with a hand-made uncertainty 1 - max p, the flip frequency per uncertainty decile matches
    `flip_probabilities` and rises from decile to decile."""
    n = 40000
    y = np.zeros(n, dtype=np.int64)  # all T-shirts: every item can flip
    u = np.random.default_rng(6).uniform(0, 0.5, n)
    probs = np.zeros((n, 10))
    probs[:, 0] = 1 - u
    probs[:, 6] = u  # the most probable other class: Shirt
    noisy = uncertainty_noise(y, probs, rate=0.4, power=2.0, seed=7)
    expected = flip_probabilities(u, 0.4, 2.0)
    dec = np.minimum((np.argsort(np.argsort(u)) * 10) // n, 9)
    freq = np.array([noisy.flipped[dec == d].mean() for d in range(10)])
    exp = np.array([expected[dec == d].mean() for d in range(10)])
    np.testing.assert_allclose(freq, exp, atol=4 * np.sqrt(0.25 / (n / 10)))
    assert np.all(np.diff(freq) > 0)
    assert set(np.unique(noisy.labels[noisy.flipped])) == {6}


def test_uncertainty_noise_eligible_and_rate_of_all_labels():
    n = 5000
    y = np.random.default_rng(8).integers(0, 10, n)
    eligible = np.random.default_rng(9).random(n) < 0.6
    noisy = uncertainty_noise(y, _probs(n, 1), rate=0.3, eligible=eligible, seed=0)
    assert not noisy.flipped[~eligible].any()
    assert noisy.rate == pytest.approx(0.3, abs=3 * np.sqrt(0.3 * 0.7 / n))
    assert uncertainty_noise(y, _probs(n, 1), rate=0.0).rate == 0


@pytest.mark.parametrize("kw,match", [
    (dict(labels=np.zeros(4)), "integer"), (dict(probs=np.ones((3, 10))), "probs"),
    (dict(rate=0.9), "can flip"), (dict(groups=((0, 2), (2, 3))), "disjoint"), (dict(eligible=[True]), "eligible")])
def test_uncertainty_noise_bad_input(kw, match):
    args = dict(labels=np.array([0, 2, 1, 5]), probs=np.full((4, 10), 0.1), rate=0.2) | kw
    with pytest.raises(InputError, match=match):
        uncertainty_noise(**args)


# --------------------------------------------------------------------------- lookalike_noise (independent)
def test_lookalike_noise_rate_and_groups():
    y = np.random.default_rng(10).integers(0, 10, 20000)
    noisy = lookalike_noise(y, rate=0.38, seed=0)
    assert noisy.rate == pytest.approx(0.38, abs=0.015)
    f = noisy.flipped
    assert all(noisy.labels[i] in GROUP_OF[int(y[i])] for i in np.flatnonzero(f))
    assert np.array_equal(lookalike_noise(y, rate=0.38, seed=0).labels, noisy.labels)


# --------------------------------------------------------------------------- overlay_lookalikes
def test_overlay_blends_two_lookalikes_and_keeps_the_label():
    rng = np.random.default_rng(11)
    y = rng.integers(0, 10, 1000)
    x = rng.integers(0, 256, (1000, 4, 4), dtype=np.uint8)
    o = overlay_lookalikes(x, y, fraction=0.2, alpha=(0.55, 0.7), seed=3)
    amb = np.flatnonzero(o.ambiguous)
    assert len(amb) == 200 and np.isin(y[amb], [c for g in GROUPS for c in g]).all()
    assert np.array_equal(o.images[~o.ambiguous], x[~o.ambiguous]) and not np.shares_memory(o.images, x)
    for i in amb:
        j, a = o.partner[i], o.alpha[i]
        assert 0.55 <= a <= 0.7 and y[j] == o.other[i] != y[i] and y[j] in GROUP_OF[int(y[i])]
        np.testing.assert_array_equal(o.images[i], np.rint(a * x[i].astype(float) + (1 - a) * x[j]).astype(np.uint8))
    assert (o.partner[~o.ambiguous] == -1).all() and (o.alpha[~o.ambiguous] == 0).all()
    assert np.array_equal(overlay_lookalikes(x, y, fraction=0.2, seed=3).images, o.images)


@pytest.mark.parametrize("kw,match", [
    (dict(alpha=(0.4, 0.6)), "alpha"), (dict(fraction=0.95), "fraction"),
    (dict(images=np.zeros((10, 4, 4))), "uint8")])
def test_overlay_bad_input(kw, match):
    y = np.arange(10)
    args = dict(images=np.zeros((10, 4, 4), np.uint8), labels=y, fraction=0.2) | kw
    with pytest.raises(InputError, match=match):
        overlay_lookalikes(**args)


# --------------------------------------------------------------------------- clean_posterior
def test_clean_posterior_is_a_distribution_that_separates_easy_classes():
    rng = np.random.default_rng(12)
    y = np.arange(600) % 3
    x = rng.integers(0, 40, (600, 6, 6)).astype(np.uint8)
    x[y == 1, :3] += 200  # class 1 bright on top, class 2 bright at the bottom, class 0 dark
    x[y == 2, 3:] += 200
    p = clean_posterior(x, y, components=5)
    assert p.shape == (600, 3)
    np.testing.assert_allclose(p.sum(1), 1.0, atol=1e-6)  # float32 features
    assert (p.argmax(1) == y).mean() > 0.99
    with pytest.raises(InputError):
        clean_posterior(x, np.zeros(600, int))


# ------------------------------------------------------------------------------------------ ambiguity_noise
def _amb_set(n=30000, seed=5):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 10, n)
    x = rng.integers(0, 256, (n, 4, 4)).astype(np.uint8)
    return x, y, _probs(n, seed)


def _within(k, n, p, sds=4.0):
    """k successes of n Bernoulli(p) draws lie within ``sds`` binomial standard deviations of n p."""
    return abs(k - n * p) <= sds * np.sqrt(n * p * (1 - p)) + 1e-9


def test_ambiguity_levels_are_equal_count_bins_of_the_labellers_uncertainty():
    p = np.array([[0.9, 0.1], [0.5, 0.5], [0.7, 0.3], [0.6, 0.4], [1.0, 0.0], [0.8, 0.2]])
    np.testing.assert_array_equal(ambiguity_levels(p, 3), [0, 2, 1, 2, 0, 1])  # uncertainty .1 .5 .3 .4 0 .2
    with pytest.raises(InputError, match="n_levels"):
        ambiguity_levels(p, 0)


def test_ambiguity_noise_flip_rate_per_level_matches_its_probability():
    x, y, p = _amb_set()
    r = ambiguity_noise(x, y, p, flips=(0.1, 0.4, 0.7), seed=2)
    for level, prob in enumerate((0.1, 0.4, 0.7)):  # single garments outside the clean subset flip at random
        m = (r.level == level) & ~r.clean
        assert m.sum() > 5000 and _within(int(r.flipped[m].sum()), int(m.sum()), prob)
    assert not r.flipped[r.clean].any() and not r.ambiguous[r.clean].any()
    assert r.clean.sum() == round(0.005 * len(y)) and (r.level[r.ambiguous] == -1).all()
    np.testing.assert_array_equal(r.true, y)
    np.testing.assert_array_equal(r.flipped, r.labels != y)


def test_ambiguity_noise_flip_targets_follow_the_posterior_not_its_argmax():
    n = 40000
    y = np.zeros(n, int)
    p = np.tile([0.1, 0.6, 0.3], (n, 1))  # the other classes: 2/3 class 1, 1/3 class 2
    t = posterior_targets(y, p, np.random.default_rng(0))
    assert set(np.unique(t)) == {1, 2} and _within(int((t == 2).sum()), n, 1 / 3)
    t = posterior_targets(np.array([0, 1]), np.array([[1.0, 0, 0], [0, 1.0, 0]]), np.random.default_rng(1))
    assert t[0] != 0 and t[1] != 1  # nothing but the own class: uniform over the others


def test_ambiguity_noise_blend_labels_follow_the_blend_weight():
    x, y, p = _amb_set()
    r = ambiguity_noise(x, y, p, blends=0.3, alpha=(0.55, 0.95), seed=4)
    amb = r.ambiguous
    assert amb.mean() == pytest.approx(0.3, abs=1e-4)
    o = overlay_lookalikes(x, y, fraction=0.3, alpha=(0.55, 0.95), seed=4)  # the same blends
    np.testing.assert_array_equal(o.images, r.images)
    assert set(np.unique(r.labels[amb & r.flipped] == o.other[amb & r.flipped])) == {True}  # wrong = the partner
    for lo, hi in ((0.55, 0.7), (0.8, 0.95)):  # the partner's label with probability 1 - a, per band of a
        m = amb & (r.alpha >= lo) & (r.alpha < hi)
        expect = float((1 - r.alpha[m]).mean())
        assert _within(int(r.flipped[m].sum()), int(m.sum()), expect)


def test_ambiguity_noise_is_reproducible_and_two_seeds_draw_independently():
    x, y, p = _amb_set()
    a, b = ambiguity_noise(x, y, p, seed=0), ambiguity_noise(x, y, p, seed=1)
    np.testing.assert_array_equal(a.labels, ambiguity_noise(x, y, p, seed=0).labels)
    np.testing.assert_array_equal(a.images, ambiguity_noise(x, y, p, seed=0).images)
    single = ~a.ambiguous & ~b.ambiguous & ~a.clean & ~b.clean
    q = np.asarray(AMBIGUITY_FLIPS)[a.level[single]]
    both = int((a.flipped & b.flipped)[single].sum())  # independent draws: P(both) = p^2 per item
    assert abs(both - (q ** 2).sum()) <= 4 * np.sqrt((q ** 2 * (1 - q ** 2)).sum())
    assert a.flipped[single].mean() - (a.flipped & b.flipped)[single].mean() > 0.15  # not the same flips
    pool = np.isin(y, [c for g in GROUPS for c in g]).mean()  # blends are drawn among look-alike garments
    assert abs(a.ambiguous[b.ambiguous].mean() - 0.3 / pool) < 0.03  # and afresh: b's blends are a's at their rate


@pytest.mark.parametrize("kw,match", [(dict(flips=(0.1, 1.2)), "flips"), (dict(clean_fraction=0.0), "clean"),
                                      (dict(probs=np.ones((3, 10))), "probs"), (dict(blends=0.95), "fraction")])
def test_ambiguity_noise_bad_input(kw, match):
    x, y, p = _amb_set(200)
    with pytest.raises(InputError, match=match):
        ambiguity_noise(**(dict(images=x, labels=y, probs=p) | kw))
