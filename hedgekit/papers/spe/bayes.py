"""Reference accuracies on SPE's L-shapes (Scott et al. 2019, sec. 4.1, App. A.2): what a classifier that
sees the true factors reaches, with the class centres known (Bayes) or estimated from k support images
(the prototype oracle), and how much of each factor Fig. 3's images still carry without a network.

The data set itself, its generative model and class likelihood are `hedgekit.data.lshapes`.

Bayes-optimal accuracy (`bayes_optimal_accuracy`, `bayes_accuracy_1d`)
----------------------------------------------------------------------
With equal priors and the true (orientation, hue) visible, the classes form
the Cartesian product {90, 180} x {90, 180} and the class likelihood
factorises, ``p(o, h | k) = f(o | mu_o(k)) f(h | mu_h(k))``. The arg-max over
the four classes is therefore the pair of per-axis arg-maxes, and because ``o``
and ``h`` are independent given the class the accuracy is the product of two
1-D accuracies, ``A = A_o A_h = A_1d^2``. In 1-D, two wrapped normals with
centres 90 and 180 (equal sigma, unimodal and symmetric) are separated by the
two equidistant points 135 and 315 deg: the decision arc for centre 90 is
(-45, 135), i.e. 45 deg on the near side and 135 deg on the far side. So

    A_1d = sum_k [Phi((45 + 360 k) / 30) - Phi((-135 + 360 k) / 30)] = 0.933189,
    A    = A_1d^2 = 0.870842  (87.1 %),

matching the paper's "approximately 87 %". ``bayes_accuracy_1d`` also
computes ``A_1d`` by 1-D quadrature of ``0.5 max(f_90, f_180)`` over the circle
(no boundary assumption), and ``bayes_optimal_accuracy(exact=False)`` by
Monte Carlo with the same sampler that generates the images.

With k support images per class (`prototype_oracle_accuracy`)
--------------------------------------------------------------
The Bayes rate assumes the class centres are known. An episodic classifier
(PN, SPE) instead estimates each class from its k support images, and pays
for their spread. ``prototype_oracle_accuracy(k)`` measures that price with
perfect features: every image becomes its per-axis posteriors
``(p(orientation centre 180 | o), p(hue centre 180 | h))`` computed from its
true factors, a prototype is the mean of its class's k support features and
a query goes to the nearest prototype. As k grows the prototypes become the
class means of the features, which sit on a square symmetric about 0.5 on
each axis, so the nearest prototype is the per-axis Bayes decision and the
rate tends to ``A``; at the paper's k = 2 it is lower.

Read-out without a network (`readout_sweep`): Fig. 3's inputs, their factors read back from the pixels.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from scipy import integrate
from scipy.special import ndtr

from hedgekit.checks import check_count, check_number
from hedgekit.data.lshapes import (CLASS_CENTERS, CLASS_STD, HUE_CENTERS, ORIENTATION_CENTERS, bayes_hit_rate,
                                   centroid_sweep, circular_mean, orientation_from_centroid, render_batch,
                                   rgb_to_hue, sample_factors, wrap_degrees, wrapped_normal_logpdf)
from hedgekit.errors import InputError

__all__ = ["bayes_accuracy_1d", "bayes_optimal_accuracy", "prototype_oracle_accuracy", "readout_sweep"]

_ORACLE_MAX_IMAGES = 50_000_000  # episodes x 4 classes x (support + query): ~1.6 GB of float64 features
_READOUT_MAX_IMAGES = 20_000  # 64 x 64 RGB float32 images rendered at once: ~1 GB


def bayes_optimal_accuracy(n_mc: int = 200_000, seed: int = 0, exact: bool = True, *,
                           class_std: float = CLASS_STD) -> float:
    """Accuracy of the Bayes classifier that sees the true (orientation, hue), equal priors.

    ``exact=True``: ``bayes_accuracy_1d() ** 2`` (the classes factorise over the two axes;
    module docstring) = 0.870842 for the paper's model, i.e. 87.1 % -- the paper says
    "approximately 87 %". ``exact=False``: Monte Carlo over ``n_mc`` test-set factors from
    `hedgekit.data.lshapes.sample_factors` (standard error ~ sqrt(A (1 - A) / n_mc) ~ 0.00075 at 200k),
    classified by the arg-max of `hedgekit.data.lshapes.class_log_likelihood`.
    """
    if exact:
        return bayes_accuracy_1d(class_std, ORIENTATION_CENTERS, "closed") * \
            bayes_accuracy_1d(class_std, HUE_CENTERS, "closed")
    f = sample_factors(check_count(n_mc, "n_mc"), seed, train=False, class_std=class_std)
    return bayes_hit_rate(f["orientation"], f["hue"], f["labels"], class_std)


def bayes_accuracy_1d(class_std: float = CLASS_STD, centers: tuple[float, float] = ORIENTATION_CENTERS,
                      method: str = "closed", n_wrap: int = 3) -> float:
    """Accuracy of the Bayes classifier between two equiprobable wrapped normals on the circle.

    ``method='closed'``: the decision boundaries are the two points equidistant from the
    centres (the wrapped normal is unimodal and symmetric), so with separation ``d`` the arc of
    one class reaches ``d/2`` towards the other centre and ``180 - d/2`` away from it:
    ``A = sum_k Phi((d/2 + 360k)/s) - Phi((-(180 - d/2) + 360k)/s)``.
    ``method='quadrature'``: ``0.5 * integral over the circle of max(f_a, f_b)`` by adaptive
    quadrature (no assumption about the boundaries). For 90 / 180 deg, sigma 30: 0.933189.
    """
    s = check_number(class_std, "class_std", 0.0, above=True)
    ca, cb = (check_number(float(c), "centers") for c in np.asarray(centers, dtype=np.float64).reshape(2))
    d = float(abs(wrap_degrees(cb - ca + 180.0) - 180.0))   # circular separation in [0, 180]
    if method == "closed":
        k = np.arange(-n_wrap, n_wrap + 1) * 360.0
        return float(np.sum(ndtr((d / 2.0 + k) / s) - ndtr((-(180.0 - d / 2.0) + k) / s)))
    if method == "quadrature":
        def integrand(x: float) -> float:
            fa = np.exp(wrapped_normal_logpdf(np.asarray(x), ca, s, n_wrap))
            fb = np.exp(wrapped_normal_logpdf(np.asarray(x), cb, s, n_wrap))
            return 0.5 * float(max(fa, fb))
        mid = ca + (wrap_degrees(cb - ca + 180.0) - 180.0) / 2.0       # boundary between the centres
        lo = float(mid) - 180.0
        val, _ = integrate.quad(integrand, lo, lo + 360.0, points=[float(mid)], limit=200,
                                epsabs=1e-13, epsrel=1e-12)
        return float(val)
    raise InputError(f"method must be 'closed' or 'quadrature'; got {method!r}")


def prototype_oracle_accuracy(k_support: int, n_episodes: int = 4000, query_per_class: int = 25, seed: int = 0, *,
                              class_std: float = CLASS_STD) -> float:
    """Accuracy of a nearest-prototype classifier on perfect features, in 4-way k-shot episodes.

    The reference for an episodic learner on this data (module docstring, "With k support images
    per class"): each image is mapped to its per-axis Bayes posteriors from its *true* factors, a
    class prototype is the mean of its ``k_support`` support features (SPE sec. 4.1, App. A.2:
    2 per class), and each of ``query_per_class`` queries per class is assigned to the nearest
    prototype (squared Euclidean distance). Factors come from the class-conditional wrapped normals
    of `hedgekit.data.lshapes.sample_factors`, drawn afresh for every episode. Tends to
    `bayes_optimal_accuracy` as ``k_support`` grows; standard error about
    ``sqrt(A (1 - A) / (4 n_episodes query_per_class))`` (0.0008 at the defaults).
    """
    k = check_count(k_support, "k_support")
    e = check_count(n_episodes, "n_episodes")
    q = check_count(query_per_class, "query_per_class")
    s = check_number(class_std, "class_std", 0.0, above=True)
    if e * 4 * (k + q) > _ORACLE_MAX_IMAGES:
        raise InputError(f"n_episodes x 4 x (k_support + query_per_class) = {e * 4 * (k + q):,} factor draws; "
                         f"at most {_ORACLE_MAX_IMAGES:,} fit in memory: use fewer episodes")
    rng = np.random.default_rng(seed)
    centres = np.asarray(CLASS_CENTERS, dtype=np.float64)          # (4, 2)
    factors = centres[:, None, None, :] + rng.normal(0.0, s, size=(4, e, k + q, 2))  # (class, episode, image, axis)
    feats = np.empty_like(factors)
    for axis, (lo, hi) in enumerate((ORIENTATION_CENTERS, HUE_CENTERS)):
        x = factors[..., axis]
        log_odds = wrapped_normal_logpdf(x, hi, s, 3) - wrapped_normal_logpdf(x, lo, s, 3)
        feats[..., axis] = 0.5 * (1.0 + np.tanh(0.5 * log_odds))   # p(centre hi | x), overflow-free sigmoid
    protos = feats[:, :, :k].mean(axis=2)                          # (class, episode, axis)
    queries = feats[:, :, k:]                                      # (class, episode, query, axis)
    d = ((queries[:, :, :, None, :] - protos.transpose(1, 0, 2)[None, :, None]) ** 2).sum(-1)  # (4, e, q, 4)
    return float(np.mean(d.argmin(-1) == np.arange(4)[:, None, None]))


def readout_sweep(levels: Any, factor: str = "hue_noise", repeats: int = 1, *, leg_length: float = 1.0,
                  seed: int = 0, class_std: float = CLASS_STD) -> dict[str, np.ndarray]:
    """How much of each factor the pixels of Fig. 3's inputs still carry, read back without a network.

    Renders exactly the images of `hedgekit.data.lshapes.centroid_sweep` (same arguments, same noise draws)
    and reads the factors back: the orientation from the pixel-mass centroid (`orientation_from_centroid`),
    the hue as the coverage-weighted circular mean of the shape's pixel hues (`rgb_to_hue`). Returns
    ``level`` (L,), ``orientation_error`` and ``hue_error`` (L,): the root-mean-square circular error in
    degrees over the four centroids and the repeats, and ``accuracy`` (L,): the Bayes accuracy of an
    observer who sees the factors through these read-outs, ``A_1d(sqrt(s^2 + e_o^2)) A_1d(sqrt(s^2 + e_h^2))``
    with ``s = class_std`` (`bayes_accuracy_1d`), i.e. treating each read-out error as Gaussian
    noise independent of the factor. Fig. 3 expects uncertainty to grow where this accuracy falls.
    """
    s = check_number(class_std, "class_std", 0.0, above=True)
    f = centroid_sweep(levels, factor, repeats, leg_length=leg_length, seed=seed)
    if f["labels"].size > _READOUT_MAX_IMAGES:
        raise InputError(f"levels x 4 classes x repeats = {f['labels'].size:,} images; at most {_READOUT_MAX_IMAGES:,} "
                         "are rendered at once (~1 GB): use fewer repeats or levels")
    images = render_batch(f["orientation"], f["hue"], f["hue_noise"], f["leg_length"], f["noise_seed"],
                          dtype=np.float32)                               # (L, 4, repeats, 3, H, W)
    coverage = images.max(axis=-3).astype(np.float64)
    hue = rgb_to_hue(images)                                              # NaN on the black background
    hue_read = circular_mean(np.nan_to_num(hue), weights=np.where(np.isnan(hue), 0.0, coverage), axis=(-2, -1))
    errors = {}
    for name, read in (("orientation", orientation_from_centroid(images)), ("hue", hue_read)):
        diff = wrap_degrees(read - f[name] + 180.0) - 180.0
        errors[name] = np.sqrt((diff ** 2).mean(axis=(1, 2)))
    acc = np.array([bayes_accuracy_1d(np.hypot(s, eo), ORIENTATION_CENTERS)
                    * bayes_accuracy_1d(np.hypot(s, eh), HUE_CENTERS)
                    for eo, eh in zip(errors["orientation"], errors["hue"])])
    return dict(level=f["level"][:, 0, 0].copy(), orientation_error=errors["orientation"], hue_error=errors["hue"],
                accuracy=acc, factor=factor)


