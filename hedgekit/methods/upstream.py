"""The common interface of the eleven URL methods (Kirchhof et al. 2023, sec. 4.1 and App. B):

    e(x) = W h(x) + b on the backbone's features h(x);  u(x) per method, e.g. the class entropy
    u(x) = H(P(Y|x)) = -sum_c p_c log p_c, or for M members JS = H(1/M sum_m p_m) - 1/M sum_m H(p_m).

Every URL method is a *head* on a shared backbone: it takes the backbone's
features (B, feat_dim), projects them to the embedding e(x) (B, embed_dim) on which
R@1 is measured, and predicts a scalar uncertainty u(x) (higher = more uncertain)
that R-AUROC scores. The paper's explicit uncertainty modules are MLPs on the
embedding (App. B); :func:`mlp` builds them here. Each method file registers its
class in :data:`METHODS` with :func:`register`; :func:`build_method` builds one by name.

Shared pieces of the class-probability methods (CE, HET-XL, SNGP, Ensemble,
MCDropout): :func:`entropy` H(P(Y|x)) and :func:`js_divergence`, the Jensen-Shannon
divergence between ensemble members (sec. 4.1).
"""
from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from hedgekit.embedding import Embedding
from hedgekit.errors import InputError


class UpstreamMethod(nn.Module):
    """A URL method = a head on top of a shared backbone's features (B, feat_dim).

    Subclasses set ``name`` and implement :meth:`forward` (returning at least
    ``{"embedding": (B, embed_dim), "uncertainty": (B,)}``, ``"logits"`` (B, n_classes) when the
    method classifies (all but InfoNCE, MCInfoNCE and HIB; for upstream accuracy), plus what
    :meth:`loss` needs) and :meth:`loss` (a scalar for upstream training on class labels).
    ``self.project`` (features -> embedding) is created here, shared by all methods.

    :meth:`loss` computes its equation only: the labels are checked once where they enter, by
    `hedgekit.training.upstream.fit_upstream` (an integer class 0..n_classes-1 per image, two images of every
    class for a ``pairwise`` loss), and the constructor checks the method's settings.
    """

    name: str = ""
    supervised: bool = True  # False: trained on two views of unlabelled images (`hedgekit.training.upstream`)
    pairwise: bool = False  # True: the loss compares the images of one class within a batch (InfoNCE-like)

    def __init__(self, feat_dim: int, n_classes: int, embed_dim: int = 16):
        super().__init__()
        self.feat_dim, self.n_classes = count("feat_dim", feat_dim), count("n_classes", n_classes, 2)
        self.embed_dim = count("embed_dim", embed_dim, 2)
        self.project = nn.Linear(feat_dim, embed_dim)

    def embed(self, features: Tensor) -> Tensor:
        """(B, embed_dim) pre-normalisation embedding; checks the features' shape first."""
        if features.ndim != 2 or features.shape[1] != self.feat_dim:
            raise InputError(f"{self.name} expects features of shape (B, {self.feat_dim}); got {tuple(features.shape)}")
        return self.project(features)

    def forward(self, features: Tensor) -> dict[str, Tensor]:  # pragma: no cover - abstract
        raise NotImplementedError

    def loss(self, out: dict[str, Tensor], labels: Tensor) -> Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def on_step(self, features: Tensor, out: dict[str, Tensor], labels: Tensor) -> None:
        """Called by the training loop after each optimiser step; nothing by default (SNGP uses it)."""

    def to_embedding(self, out: dict[str, Tensor]) -> Embedding:
        """The forward output as hedgekit's :class:`Embedding` (a point with its u(x))."""
        return Embedding.point(out["embedding"], out["uncertainty"])


METHODS: dict[str, type[UpstreamMethod]] = {}


def register(cls: type[UpstreamMethod]) -> type[UpstreamMethod]:
    """Class decorator: add a method to :data:`METHODS` under its ``name``."""
    METHODS[cls.name] = cls
    return cls


def build_method(name: str, feat_dim: int, n_classes: int, embed_dim: int = 16, **hparams) -> UpstreamMethod:
    """Build the registered URL method ``name`` (one of :data:`METHODS`) with its hyperparameters."""
    if name not in METHODS:
        raise InputError(f"unknown URL method {name!r}; choose one of {sorted(METHODS)}")
    try:
        return METHODS[name](feat_dim, n_classes, embed_dim, **hparams)
    except TypeError as err:  # an unknown keyword argument
        raise InputError(f"bad hyperparameters for {name!r}: {err}") from None


def mlp(in_dim: int, out_dim: int, hidden: int = 64, layers: int = 3) -> nn.Sequential:
    """The paper's uncertainty module: a ``layers``-layer MLP with ReLU (App. B: "a 3-layer MLP")."""
    dims = [in_dim] + [hidden] * (layers - 1) + [out_dim]
    mods: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(dims[:-1], dims[1:])):
        mods += [nn.Linear(a, b)] + ([nn.ReLU()] if i < layers - 1 else [])
    return nn.Sequential(*mods)


def inverse_softplus(y: float) -> float:
    """x with softplus(x) = y, to initialise a positive output (e.g. kappa) at y."""
    if y <= 0:
        raise InputError(f"softplus only reaches positive values; got {y}")
    return y + math.log(-math.expm1(-y))


def entropy(probs: Tensor) -> Tensor:
    """H(P) = -sum_c p_c log p_c over the last axis (0 log 0 = 0), the URL class entropy u(x)."""
    return -torch.special.xlogy(probs, probs).sum(-1)


def js_divergence(member_probs: Tensor) -> Tensor:
    """Jensen-Shannon divergence of M members (B, M, C): H(mean_m p_m) - mean_m H(p_m)."""
    return entropy(member_probs.mean(1)) - entropy(member_probs).mean(1)


def positive(name: str, value: float) -> float:
    if not value > 0:
        raise InputError(f"{name} must be > 0; got {value!r}")
    return float(value)


def count(name: str, value: int, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise InputError(f"{name} must be an integer >= {low}; got {value!r}")
    return value


def member_uncertainty(member_probs: Tensor, kind: str) -> Tensor:
    """u(x) of an ensemble's members (B, M, C): "entropy" H(mean_m p_m) or "js" (sec. 4.1, Ensemble/MCDropout)."""
    return entropy(member_probs.mean(1)) if kind == "entropy" else js_divergence(member_probs)


def check_kind(kind: str) -> str:
    if kind not in ("entropy", "js"):
        raise InputError(f"u must be 'entropy' (class entropy of the averaged prediction) or 'js' "
                         f"(Jensen-Shannon divergence); got {kind!r}")
    return kind
