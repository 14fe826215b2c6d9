"""SPE on the compare page (Scott et al. 2019): class prototypes from a few training images (eq. 5-6) and the
class posterior p(y | x, S) of an occluded input (eq. 7).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from hedgekit.data import NDigitSet
from hedgekit.embedding import Embedding
from hedgekit.evaluation.centroids import CentroidTable, first_per_class
from hedgekit.interactive.inputs import model_input
from hedgekit.interactive.models import app_preset, trained_or_fast
from hedgekit.nets import EmbeddingNet
from hedgekit.viz.geometry import pca_basis
from hedgekit.zoo import Spec

__all__ = ["APP_SUPPORT_IMAGES", "spe_spec", "PrototypeSet", "prototype_set", "prototype_posterior"]

APP_SUPPORT_IMAGES = 20  # training images per class whose embeddings make the SPE class prototypes


def spe_spec(preset: str | None = None, n_digits: int = 2):
    """The SPE model of the compare page (notebook 07's N-digit model, D = 2), via `trained_or_fast`."""
    return trained_or_fast(Spec(kind="spe", data="ndigit", n_digits=n_digits, dim=2, preset=preset or app_preset()))


@dataclass(frozen=True, eq=False)
class PrototypeSet:
    """SPE class prototypes built from training images: the support and its classes.

    ``table`` holds the prototype means mu_y (SPE eq. 5) as a `CentroidTable` (so the map draws them like
    centroids); ``variances`` (K, D) are sigma_hat_y^2 = sigma_y^2 + sigma_eps^2, the class likelihoods'
    variances (eq. 6); ``support`` and ``support_classes`` (row -> position in ``table.class_ids``) are
    what `prototype_posterior` hands to the SPE head.
    """

    table: CentroidTable
    variances: np.ndarray
    support: Embedding
    support_classes: torch.Tensor


@torch.no_grad()
def prototype_set(model: EmbeddingNet, head, train: NDigitSet, per_class: int = APP_SUPPORT_IMAGES) -> PrototypeSet:
    """Prototypes of every class of ``train`` from its first ``per_class`` clean images (SPE eq. 5-6)."""
    ds = train.subset(first_per_class(train.labels, per_class))
    x, _ = ds.tensors(corrupt=False)
    support = model.eval().embed(x)
    class_ids, classes = np.unique(ds.labels, return_inverse=True)
    classes = torch.as_tensor(classes, dtype=torch.long)
    mu, var = head.class_distributions(support, classes, len(class_ids))
    mu = mu.numpy().astype(np.float32)
    table = CentroidTable(class_ids.astype(np.int64), mu, np.ones(len(class_ids), dtype=bool),
                          np.bincount(classes.numpy(), minlength=len(class_ids)), pca_basis(mu), train.n_digits)
    return PrototypeSet(table, var.numpy().astype(float), support, classes)


@torch.no_grad()
def prototype_posterior(model: EmbeddingNet, head, image, boxes, protos: PrototypeSet, seed: int = 0) -> np.ndarray:
    """(K,) p(y | x, S) of the occluded ``image`` over the classes of ``protos`` (SPE eq. 7), with the head's
    evaluation sampler (naive, 200 samples) drawn from a fixed seed, so the numbers never flicker. An image of
    dark digits on a light background is inverted first, with a `PolarityWarning` (`model_input`)."""
    shape = tuple(model.input_shape[1:])
    seen, boxes, _, _ = model_input(image, boxes, shape)
    x = torch.from_numpy(seen.astype(np.float32) / 255.0)[None, None]
    query = model.eval()(x).to("cpu").map(lambda t: t.float())
    log_p = head.eval().log_posterior(query, protos.support, protos.support_classes, len(protos.table.class_ids),
                                      generator=torch.Generator().manual_seed(seed))
    return log_p[0].exp().numpy().astype(float)
