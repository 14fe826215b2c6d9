"""The one object every model returns: a batch of embedding distributions p(z|x).

Every embedding in the kit is a mixture of C diagonal Gaussians in R^D:

* point embedding (contrastive loss, Prototypical Networks): C = 1, variance 0;
* HIB single Gaussian "MoG-1" (Oh et al. 2019, sec. 2.2): C = 1;
* HIB mixture "MoG-C" (Oh et al. 2019, sec. 2.2): C components, equal weights;
* SPE support embeddings / prototypes (Scott et al. 2019, eq. 3-5): C = 1;
* heteroscedastic triplet (Taha et al. 2019): C = 1 with one isotropic
  log-variance per input (build with a (B, 1) variance, broadcast over D);
* URL methods that predict a scalar uncertainty directly (Kirchhof et al. 2023):
  any of the above plus ``uncertainty`` of shape (B,).

Losses, uncertainty measures, metrics and plots all take an :class:`Embedding`.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass, field, replace
from typing import Sequence

import torch
from torch import Tensor

from hedgekit.checks import check_count, check_memory, values_checked
from hedgekit.errors import InputError


def _check_finite(name: str, t: Tensor) -> None:
    if not torch.isfinite(t).all():
        raise InputError(f"{name} contains NaN or inf values; check the model input (NaN pixels?) and training stability")


@dataclass(frozen=True)
class Embedding:
    """A batch of B mixtures of C diagonal Gaussians in R^D.

    Attributes:
        mean: (B, C, D) component means.
        var: (B, C, D) component variances (diagonal covariance); zeros for point embeddings.
        weights: (B, C) mixture weights, non-negative, summing to one per row.
        uncertainty: optional (B,) scalar uncertainty predicted directly by the model.
        stochastic: what the maker knows without reading the values: True if every variance is > 0 by
            construction (a softplus plus a floor), False for point embeddings (all zero), None if unknown.
            `is_point` answers from it without making a GPU wait (`hedgekit.checks.deferred_value_checks`);
            it is verified with the other value checks.
    """

    mean: Tensor
    var: Tensor
    weights: Tensor
    uncertainty: Tensor | None = None
    stochastic: bool | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.mean.ndim != 3:
            raise InputError(f"Embedding.mean must have shape (B, C, D); got {tuple(self.mean.shape)}")
        b, c, _ = self.mean.shape
        if self.var.shape != self.mean.shape:
            raise InputError(f"Embedding.var must match mean's shape {tuple(self.mean.shape)}; got {tuple(self.var.shape)}")
        if self.weights.shape != (b, c):
            raise InputError(f"Embedding.weights must have shape ({b}, {c}); got {tuple(self.weights.shape)}")
        if self.uncertainty is not None and self.uncertainty.shape != (b,):
            raise InputError(f"Embedding.uncertainty must have shape ({b},); got {tuple(self.uncertainty.shape)}")
        if self.stochastic not in (None, True, False):
            raise InputError(f"Embedding.stochastic must be True, False or None; got {self.stochastic!r}")
        if not values_checked():
            return
        _check_finite("Embedding.mean", self.mean)
        _check_finite("Embedding.var", self.var)
        _check_finite("Embedding.weights", self.weights)
        if (self.var < 0).any():
            raise InputError("Embedding.var must be non-negative")
        if (self.weights < 0).any() or ((self.weights.sum(1) - 1).abs() > 1e-5).any():
            raise InputError("Embedding.weights must be non-negative and sum to 1 per row")
        if self.stochastic is not None and self.stochastic != bool((self.var > 0).all()):
            raise InputError("Embedding.stochastic=True needs every variance > 0" if self.stochastic else
                             "Embedding.stochastic=False (a point embedding) needs every variance = 0")

    # ------------------------------------------------------------------ builders
    @classmethod
    def point(cls, z: Tensor, uncertainty: Tensor | None = None) -> "Embedding":
        """Deterministic embeddings z (B, D): one component with zero variance."""
        if z.ndim != 2:
            raise InputError(f"point embeddings must have shape (B, D); got {tuple(z.shape)}")
        mean = z.unsqueeze(1)
        return cls(mean, torch.zeros_like(mean), z.new_ones(z.shape[0], 1), uncertainty, stochastic=False)

    @classmethod
    def gaussian(cls, mean: Tensor, var: Tensor, uncertainty: Tensor | None = None) -> "Embedding":
        """Single diagonal Gaussians: mean (B, D) and var (B, D), or (B, 1) for isotropic."""
        if mean.ndim != 2 or var.ndim != 2 or var.shape[0] != mean.shape[0] or var.shape[1] not in (1, mean.shape[1]):
            raise InputError(f"gaussian needs mean (B, D) and var (B, D) or (B, 1); got {tuple(mean.shape)} and {tuple(var.shape)}")
        var = var.expand_as(mean)
        return cls(mean.unsqueeze(1), var.unsqueeze(1), mean.new_ones(mean.shape[0], 1), uncertainty)

    @classmethod
    def mixture(cls, mean: Tensor, var: Tensor, weights: Tensor | None = None,
                stochastic: bool | None = None) -> "Embedding":
        """Mixtures: mean and var (B, C, D); weights (B, C), default equal (HIB sec. 2.2); ``stochastic`` as
        the class says."""
        if weights is None:
            weights = mean.new_full(mean.shape[:2], 1.0 / mean.shape[1])
        return cls(mean, var, weights, stochastic=stochastic)

    @classmethod
    def cat(cls, parts: Sequence["Embedding"]) -> "Embedding":
        """Concatenate batches along B."""
        if not parts:
            raise InputError("Embedding.cat needs at least one part")
        unc = [p.uncertainty for p in parts]
        kinds = {p.stochastic for p in parts}
        return cls(
            torch.cat([p.mean for p in parts]),
            torch.cat([p.var for p in parts]),
            torch.cat([p.weights for p in parts]),
            None if any(u is None for u in unc) else torch.cat(unc),
            stochastic=kinds.pop() if len(kinds) == 1 else None,
        )

    # ---------------------------------------------------------------- properties
    @property
    def batch_size(self) -> int:
        return self.mean.shape[0]

    @property
    def n_components(self) -> int:
        return self.mean.shape[1]

    @property
    def dim(self) -> int:
        return self.mean.shape[2]

    @property
    def is_point(self) -> bool:
        """True if every variance is 0; from ``stochastic`` where the maker declared it."""
        return not self.stochastic if self.stochastic is not None else bool((self.var == 0).all())

    def __len__(self) -> int:
        return self.batch_size

    def __getitem__(self, idx) -> "Embedding":
        """Index the batch; an integer keeps the batch dimension (returns a batch of one)."""
        if isinstance(idx, Tensor) and idx.ndim == 0 and not idx.is_floating_point():
            idx = int(idx)
        try:
            i = operator.index(idx)
        except TypeError:
            pass
        else:
            if not -self.batch_size <= i < self.batch_size:
                raise IndexError(f"index {i} out of range for a batch of {self.batch_size}")
            i %= self.batch_size
            idx = slice(i, i + 1)
        unc = None if self.uncertainty is None else self.uncertainty[idx]
        return Embedding(self.mean[idx], self.var[idx], self.weights[idx], unc, stochastic=self.stochastic)

    def map(self, fn) -> "Embedding":
        """Apply ``fn`` to every tensor (e.g. ``lambda t: t.to('cuda')``); ``stochastic`` is kept, and checked
        against the new values with the other checks."""
        unc = None if self.uncertainty is None else fn(self.uncertainty)
        return Embedding(fn(self.mean), fn(self.var), fn(self.weights), unc, stochastic=self.stochastic)

    def detach(self) -> "Embedding":
        return self.map(torch.Tensor.detach)

    def to(self, device) -> "Embedding":
        return self.map(lambda t: t.to(device))

    # ------------------------------------------------------------------ moments
    def mixture_mean(self) -> Tensor:
        """(B, D) mean of the whole mixture."""
        return (self.weights.unsqueeze(-1) * self.mean).sum(1)

    def total_var(self) -> Tensor:
        """(B, D) per-axis variance of the whole mixture (law of total variance)."""
        m = self.mixture_mean().unsqueeze(1)
        w = self.weights.unsqueeze(-1)
        return (w * (self.var + (self.mean - m) ** 2)).sum(1)

    # ------------------------------------------------------------------ sampling
    def component_schedule(self, k: int) -> Tensor:
        """(B, k) component index of each of k samples: stratified (systematic) assignment.

        Sample j takes the component whose cumulative weight interval holds
        (j + 0.5) / k. With equal weights and k a multiple of C every component
        gets exactly k / C samples: the stratified sampling of HIB sec. 2.2. Unequal
        weights are represented to within 1/k.
        """
        cdf = self.weights.cumsum(1)
        cdf = cdf / cdf[:, -1:]
        u = (torch.arange(k, device=cdf.device, dtype=cdf.dtype) + 0.5) / k
        idx = torch.searchsorted(cdf.contiguous(), u.expand(cdf.shape[0], k).contiguous())
        return idx.clamp_max(self.n_components - 1)

    def sample(self, k: int, generator: torch.Generator | None = None, eps: Tensor | None = None) -> Tensor:
        """(B, k, D) reparametrised samples z = mu_c + sqrt(var_c) * eps (HIB sec. 2.2).

        Args:
            k: samples per input.
            generator: optional torch.Generator for reproducible noise.
            eps: optional fixed standard-normal noise of shape (k, D) or (B, k, D)
                (used for deterministic evaluation).
        """
        k = check_count(k, "k (samples per input)")
        check_memory(self.batch_size * k * self.dim, f"{k} samples of {self.batch_size} {self.dim}-D embeddings",
                     "draw fewer samples per input, or sample a smaller batch at a time",
                     self.mean.element_size())
        comp = self.component_schedule(k)  # (B, k)
        gather = comp.unsqueeze(-1).expand(-1, -1, self.dim)
        mu = self.mean.gather(1, gather)
        sd = self.var.gather(1, gather).sqrt()
        if eps is None:
            eps = torch.randn(mu.shape, generator=generator, device=mu.device, dtype=mu.dtype)
        return mu + sd * eps.to(mu.dtype).expand_as(mu)

    # --------------------------------------------------------------- projection
    def project(self, w: Tensor) -> tuple[Tensor, Tensor]:
        """Linear projection z' = W^T z with W of shape (D, d) (e.g. PCA for plotting D > 2).

        Returns per-component means (B, C, d) and full covariances (B, C, d, d):
        mu' = W^T mu, Sigma' = W^T Sigma W (`project_gaussian`; design note: never t-SNE uncertain embeddings).
        """
        return project_gaussian(self.mean, self.var, torch.as_tensor(w, dtype=self.mean.dtype, device=self.mean.device))

    def with_uncertainty(self, u: Tensor) -> "Embedding":
        return replace(self, uncertainty=u)


def project_gaussian(mean, var, w):
    """mu' = W^T mu and Sigma' = W^T diag(var) W: the Gaussian N(mu, diag var) seen through z' = W^T z.

    mean and var (..., D), W (D, d); returns (..., d) and (..., d, d). numpy arrays and torch tensors alike
    (the app's maps project numpy, `Embedding.project` tensors): the one projection of a covariance.
    """
    if w.ndim != 2 or mean.shape[-1] != w.shape[0]:
        raise InputError(f"projection matrix must have shape ({mean.shape[-1]}, d); got {tuple(w.shape)}")
    if var.shape != mean.shape:
        raise InputError(f"variances {tuple(var.shape)} must match the means {tuple(mean.shape)} (diagonal)")
    return mean @ w, (w.swapaxes(0, 1) * var[..., None, :]) @ w
