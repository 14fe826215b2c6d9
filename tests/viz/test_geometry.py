"""hedgekit.viz.geometry against closed forms: ellipse quadratic form, chi-square mass, W^T Sigma W written out."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from hedgekit.errors import InputError
from hedgekit.viz import geometry as geo



# ---------------------------------------------------------------------- geometry
class TestGeometry:
    @pytest.mark.parametrize("n_sigma", [1.0, 2.0, 3.0])
    def test_ellipse_points_satisfy_quadratic_form(self, n_sigma):
        mean, cov = np.array([0.3, -1.2]), np.array([[2.0, 0.7], [0.7, 0.5]])
        pts = geo.ellipse_points(mean, cov, n_sigma, n=64)
        assert pts.shape == (64, 2)
        d = pts - mean
        q = np.einsum("ni,ij,nj->n", d, np.linalg.inv(cov), d)
        np.testing.assert_allclose(q, n_sigma**2, rtol=1e-10)
        np.testing.assert_allclose(pts[0], pts[-1])  # closed curve

    def test_axis_aligned_by_hand(self):
        # N((1, 2), diag(4, 1)) at 2 sigma: x = 1 + 4 cos t, y = 2 + 2 sin t.
        pts = geo.ellipse_points([1.0, 2.0], np.diag([4.0, 1.0]), 2.0, n=401)
        assert pts[:, 0].max() == pytest.approx(5.0) and pts[:, 0].min() == pytest.approx(-3.0)
        assert pts[:, 1].max() == pytest.approx(4.0, abs=1e-4) and pts[:, 1].min() == pytest.approx(0.0, abs=1e-4)
        assert geo.ellipse_axes(np.diag([4.0, 1.0]), 2.0) == pytest.approx((4.0, 2.0, 0.0))
        assert geo.ellipse_axes(np.diag([1.0, 4.0])) == pytest.approx((2.0, 1.0, 90.0))
        # the (2,) diagonal is accepted too
        np.testing.assert_allclose(geo.ellipse_points([1, 2], [4.0, 1.0], 2.0, 401), pts)

    def test_rotated_axes(self):
        c, s = math.cos(math.radians(30)), math.sin(math.radians(30))
        r = np.array([[c, -s], [s, c]])
        cov = r @ np.diag([9.0, 1.0]) @ r.T
        major, minor, angle = geo.ellipse_axes(cov)
        assert (major, minor, angle) == pytest.approx((3.0, 1.0, 30.0))

    def test_point_embedding_gives_degenerate_ellipse(self):
        pts = geo.ellipse_points([1.0, 1.0], np.zeros((2, 2)), 3.0, n=10)
        np.testing.assert_allclose(pts, 1.0)

    def test_sigma_mass_closed_form(self):
        for n in (1, 2, 3):
            assert geo.sigma_mass(n) == pytest.approx(1 - math.exp(-n * n / 2))

    def test_bad_covariances(self):
        with pytest.raises(InputError, match="symmetric"):
            geo.ellipse_points([0, 0], [[1, 0.5], [0, 1]])
        with pytest.raises(InputError, match="positive semi-definite"):
            geo.ellipse_points([0, 0], [[1, 0], [0, -1]])
        with pytest.raises(InputError, match=r"shape \(2,\)"):
            geo.ellipse_points([0, 0, 0], np.eye(2))
        with pytest.raises(InputError, match="n_sigma"):
            geo.ellipse_points([0, 0], np.eye(2), -1)

    def test_pca_basis_is_orthonormal(self):
        """The projection itself (W^T Sigma W) is `hedgekit.embedding.project_gaussian`, tested in test_embedding."""
        g = torch.Generator().manual_seed(0)
        w = geo.pca_basis(torch.randn(10, 3, generator=g).numpy() * [3, 1, 0.2])
        np.testing.assert_allclose(w.T @ w, np.eye(2), atol=1e-12)

    def test_pca_basis_identity_for_2d_and_sign_convention(self):
        np.testing.assert_array_equal(geo.pca_basis(np.random.default_rng(0).normal(size=(5, 2))), np.eye(2))
        pts = np.random.default_rng(1).normal(size=(20, 3)) * [5, 2, 0.1]
        w = geo.pca_basis(pts)
        assert np.all(w[np.abs(w).argmax(0), [0, 1]] > 0)
        np.testing.assert_allclose(np.abs(w[:, 0]), [1, 0, 0], atol=0.1)

    def test_moment_match_by_hand(self):
        m, c = geo.moment_match([0.5, 0.5], [[-1.0, 0.0], [1.0, 0.0]], [np.eye(2), np.eye(2)])
        np.testing.assert_allclose(m, [0, 0])
        np.testing.assert_allclose(c, [[2.0, 0.0], [0.0, 1.0]])

    def test_similarity_fit_recovers_transform(self):
        rng = np.random.default_rng(0)
        a = rng.normal(size=(30, 2))
        t = np.radians(40)
        rot = np.array([[math.cos(t), math.sin(t)], [-math.sin(t), math.cos(t)]])
        b = 2.5 * a @ rot + [1.0, -3.0]
        sim = geo.similarity_fit(a, b)
        assert sim.scale == pytest.approx(2.5) and sim.r2 == pytest.approx(1.0)
        np.testing.assert_allclose(sim(a), b, atol=1e-10)
        np.testing.assert_allclose(sim.cov(np.eye(2)), 6.25 * np.eye(2), atol=1e-10)
