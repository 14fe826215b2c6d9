"""Plotting-library-agnostic geometry of Gaussian embeddings in the plane.

Everything here returns plain numpy arrays, so the Streamlit app (plotly) and the
notebooks (matplotlib) draw the same shapes:

* `ellipse_points`: the n-sigma contour of N(mean, cov), the curve
  (x - m)^T C^-1 (x - m) = n_sigma^2 (HIB Fig. 3-4 draw these for 2D embeddings).
* `ellipse_axes`: semi-axes and angle, for patch-based plotting (matplotlib's
  ``Ellipse(xy, 2*a, 2*b, angle=deg)``).
* `sigma_mass`: probability mass inside the n-sigma ellipse of a 2D Gaussian.
* `pca_basis`: D > 2 shown in 2D by a *linear* map W (D, 2), mu' = W^T mu, Sigma' = W^T Sigma W
  (`hedgekit.embedding.project_gaussian`; design note: never t-SNE uncertain embeddings).
* `moment_match`: one Gaussian with the mean and covariance of a mixture.
* `similarity_fit`: the scale-rotation-translation that best maps one 2D layout
  onto another (least squares, Umeyama 1991), e.g. to overlay a second model's
  point embedding on this model's map.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hedgekit.errors import InputError

__all__ = ["ellipse_points", "ellipse_axes", "sigma_mass", "mahalanobis_sq", "pca_basis", "moment_match",
           "Similarity", "similarity_fit"]


def _as_mean_cov(mean, cov) -> tuple[np.ndarray, np.ndarray]:
    mean = np.asarray(mean, dtype=float)
    cov = np.asarray(cov, dtype=float)
    if mean.shape != (2,):
        raise InputError(f"mean must have shape (2,); got {mean.shape}")
    if cov.shape == (2,):  # diagonal given as its variances
        cov = np.diag(cov)
    if cov.shape != (2, 2):
        raise InputError(f"cov must have shape (2, 2) (or (2,) variances); got {cov.shape}")
    if not (np.isfinite(mean).all() and np.isfinite(cov).all()):
        raise InputError("mean and cov must be finite")
    scale = max(1.0, float(np.abs(cov).max()))
    if abs(cov[0, 1] - cov[1, 0]) > 1e-6 * scale:
        raise InputError(f"cov must be symmetric; got {cov.tolist()}")
    return mean, 0.5 * (cov + cov.T)


def _eig(cov: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (ascending, clipped at 0) and eigenvectors of a symmetric PSD 2x2 matrix."""
    vals, vecs = np.linalg.eigh(cov)
    if vals[0] < -1e-9 * max(1.0, abs(vals[-1])):
        raise InputError(f"cov must be positive semi-definite; eigenvalues {vals.tolist()}")
    return np.clip(vals, 0.0, None), vecs


def ellipse_points(mean, cov, n_sigma: float = 1.0, n: int = 100) -> np.ndarray:
    """(n, 2) points on the n-sigma contour of N(mean, cov): (x-m)^T cov^-1 (x-m) = n_sigma^2.

    The curve is closed: the last point equals the first, so the points can be drawn
    as a polygon or a line directly. ``cov`` may be (2, 2) or the (2,) diagonal. A
    singular covariance (a point embedding: zero variance) gives a degenerate
    ellipse (a segment, or n copies of the mean).
    """
    mean, cov = _as_mean_cov(mean, cov)
    if not np.isfinite(n_sigma) or n_sigma < 0:
        raise InputError(f"n_sigma must be a finite number >= 0; got {n_sigma}")
    if int(n) < 3:
        raise InputError(f"n must be >= 3 points; got {n}")
    vals, vecs = _eig(cov)
    t = np.linspace(0.0, 2.0 * np.pi, int(n))
    circle = np.stack([np.cos(t), np.sin(t)])  # (2, n), unit circle
    pts = mean[:, None] + n_sigma * (vecs * np.sqrt(vals)) @ circle
    pts[:, -1] = pts[:, 0]  # exact closure
    return pts.T


def ellipse_axes(cov, n_sigma: float = 1.0) -> tuple[float, float, float]:
    """(semi_major, semi_minor, angle_deg) of the n-sigma ellipse; angle of the major axis from +x.

    For matplotlib: ``Ellipse(mean, 2 * semi_major, 2 * semi_minor, angle=angle_deg)``.
    """
    _, cov = _as_mean_cov(np.zeros(2), cov)
    vals, vecs = _eig(cov)
    major = vecs[:, 1]
    angle = float(np.degrees(np.arctan2(major[1], major[0])))
    angle = 90.0 - (90.0 - angle) % 180.0  # an axis, not a direction: (-90, 90]
    return float(n_sigma * np.sqrt(vals[1])), float(n_sigma * np.sqrt(vals[0])), angle


def sigma_mass(n_sigma: float, dim: int = 2) -> float:
    """Probability that a D-dimensional Gaussian sample lies inside its n-sigma ellipsoid.

    For D = 2 this is 1 - exp(-n^2 / 2): 39.3% (1 sigma), 86.5% (2), 98.9% (3), not
    the 68/95/99.7 of one dimension.
    """
    from scipy.stats import chi2

    return float(chi2.cdf(float(n_sigma) ** 2, dim))


def mahalanobis_sq(x, mean, cov) -> np.ndarray:
    """(x - m)^T cov^-1 (x - m) for points x (..., 2) (cov must be invertible)."""
    mean, cov = _as_mean_cov(mean, cov)
    d = np.asarray(x, dtype=float) - mean
    return np.einsum("...i,ij,...j->...", d, np.linalg.inv(cov), d)


def pca_basis(points, d: int = 2) -> np.ndarray:
    """(D, d) orthonormal W whose columns are the top-d principal directions of points (K, D).

    Signs are fixed (the largest-magnitude entry of every column is positive), so
    the same points always give the same picture. For D == d the identity is returned
    (no rotation of an embedding that is already 2D).
    """
    x = np.asarray(points, dtype=float)
    if x.ndim != 2 or not np.isfinite(x).all():
        raise InputError(f"points must be a finite (K, D) array; got shape {x.shape}")
    k, dim = x.shape
    if dim < d:
        raise InputError(f"cannot project {dim}-D points to {d} dimensions")
    if dim == d:
        return np.eye(d)
    if k < 2:
        raise InputError("need at least 2 points for a PCA projection")
    xc = x - x.mean(0)
    _, _, vt = np.linalg.svd(xc, full_matrices=False)
    w = vt[:d].T.copy()  # (D, d)
    flip = np.sign(w[np.abs(w).argmax(0), np.arange(d)])
    return w * np.where(flip == 0, 1.0, flip)


def moment_match(weights, means, covs) -> tuple[np.ndarray, np.ndarray]:
    """Mean and covariance of a mixture sum_c w_c N(mu_c, Sigma_c) (law of total variance).

    weights (C,), means (C, d), covs (C, d, d) -> mean (d,), cov (d, d).
    """
    w = np.asarray(weights, dtype=float)
    mu = np.asarray(means, dtype=float)
    s = np.asarray(covs, dtype=float)
    if w.ndim != 1 or mu.shape[0] != w.shape[0] or s.shape != mu.shape + mu.shape[-1:]:
        raise InputError(f"need weights (C,), means (C, d), covs (C, d, d); got {w.shape}, {mu.shape}, {s.shape}")
    w = w / w.sum()
    m = w @ mu
    dev = mu - m
    return m, np.einsum("c,cij->ij", w, s) + np.einsum("c,ci,cj->ij", w, dev, dev)


@dataclass(frozen=True)
class Similarity:
    """x -> scale * x @ rotation + shift (2D similarity transform); ``r2`` is the fit's R^2."""

    scale: float
    rotation: np.ndarray  # (2, 2), orthogonal (reflections allowed)
    shift: np.ndarray  # (2,)
    r2: float

    def __call__(self, x) -> np.ndarray:
        return self.scale * np.asarray(x, dtype=float) @ self.rotation + self.shift

    def cov(self, cov) -> np.ndarray:
        """Covariance (..., 2, 2) carried through the map: s^2 R^T C R."""
        return self.scale**2 * np.swapaxes(self.rotation, 0, 1) @ np.asarray(cov, dtype=float) @ self.rotation


def similarity_fit(src, dst, reflection: bool = True) -> Similarity:
    """Least-squares similarity transform mapping points src (K, 2) onto dst (K, 2) (Umeyama 1991).

    Two independently trained 2D embeddings are only defined up to such a map (and
    more), so this is how the app overlays one model's point on another model's map;
    ``r2`` (1 = perfect) says how much of the layout the map explains.
    """
    a = np.asarray(src, dtype=float)
    b = np.asarray(dst, dtype=float)
    if a.shape != b.shape or a.ndim != 2 or a.shape[0] < 2:
        raise InputError(f"need two (K, d) point sets of equal shape, K >= 2; got {a.shape} and {b.shape}")
    ma, mb = a.mean(0), b.mean(0)
    ac, bc = a - ma, b - mb
    u, sv, vt = np.linalg.svd(ac.T @ bc)
    sign = np.ones(len(sv))
    if not reflection and np.linalg.det(u @ vt) < 0:
        sign[-1] = -1.0
    rot = (u * sign) @ vt
    var_a = (ac**2).sum()
    scale = float((sv * sign).sum() / var_a) if var_a > 0 else 1.0
    shift = mb - scale * ma @ rot
    resid = ((scale * a @ rot + shift - b) ** 2).sum()
    tot = (bc**2).sum()
    return Similarity(scale, rot, shift, float(1.0 - resid / tot) if tot > 0 else 0.0)
