"""`EmbeddedSet`: a labelled image set pushed through a model once, the input of every evaluation.

HIB's protocol (`hedgekit.evaluation.retrieval`) and SPE's episodes (`hedgekit.evaluation.episodes`)
both index one `EmbeddedSet`: the clean images, their occluded twin when the set has one
(``dataset.corrupt``, e.g. `hedgekit.data.NDigitSet` test splits), the labels, and, when asked for,
eta(x) of every image (HIB eq. 9, `hedgekit.uncertainty.self_mismatch`) with the model's match
calibration p(m|z1, z2) that ranks stochastic embeddings.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from hedgekit.checks import check_images
from hedgekit.embedding import Embedding
from hedgekit.errors import InputError
from hedgekit.hardware import ieee_float32
from hedgekit.nets.match import SoftMatch
from hedgekit.uncertainty import self_mismatch


@dataclass(frozen=True)
class EmbeddedSet:
    """A labelled set embedded once.

    Attributes:
        clean: embeddings of the clean images.
        corrupt: embeddings of the occluded twins (None if the set has none).
        labels: (M,) class labels.
        eta_clean, eta_corrupt: (M,) eta(x) of each image (None unless embedded with ``eta=True``).
        match: the model's p(m|z1, z2) (HIB eq. 2); needed to rank stochastic embeddings by match probability.
    """

    clean: Embedding
    corrupt: Embedding | None
    labels: np.ndarray
    eta_clean: np.ndarray | None = None
    eta_corrupt: np.ndarray | None = None
    match: SoftMatch | None = None

    def side(self, corrupt: bool) -> tuple[Embedding, np.ndarray | None]:
        """(embeddings, eta) of the clean or the corrupt images."""
        if corrupt and self.corrupt is None:
            raise InputError("this set has no corrupt twin; embed a set with a .corrupt array (e.g. an NDigitSet test split)")
        return (self.corrupt, self.eta_corrupt) if corrupt else (self.clean, self.eta_clean)


def images_to_tensor(images) -> Tensor:
    """uint8 or float images (N, H, W) / (N, C, H, W) in [0, 1], numpy or torch -> float (N, C, H, W) in [0, 1].

    Anything else (other dtypes, values outside [0, 1], NaN, an empty set) is an InputError
    (`hedgekit.checks.check_images`).
    """
    try:
        x = torch.as_tensor(images)
    except (TypeError, ValueError, RuntimeError) as exc:
        raise InputError(f"images could not be read as an array of pixels: {exc}") from exc
    return check_images(x)


def embed_set(model, dataset, eta: bool = True, batch_size: int = 1024) -> EmbeddedSet:
    """Embed ``dataset.images`` (and ``dataset.corrupt`` if present) once with ``model.embed`` (eval mode).

    The embeddings stay on the model's device (a GPU model's evaluation never moves them to the host);
    labels and eta are numpy arrays.

    Args:
        model: an `hedgekit.nets.EmbeddingNet` (or anything with its ``embed``; without parameters it counts as
            being on the CPU).
        dataset: anything with ``images`` and ``labels`` (`NDigitSet`, `LShapes`, ...) and optionally a
            ``corrupt`` twin of the same shape.
        eta: also compute eta(x) of every image (HIB eq. 9; needs the model's ``match``).
    """
    if not hasattr(dataset, "images") or not hasattr(dataset, "labels"):
        raise InputError(f"dataset needs .images and .labels; got {type(dataset).__name__}")
    labels = np.asarray(dataset.labels)
    if len(labels) != len(dataset.images):
        raise InputError(f"{len(dataset.images)} images but {len(labels)} labels")
    params = model.parameters() if hasattr(model, "parameters") else iter(())
    device = next(params, torch.empty(0)).device
    twin = getattr(dataset, "corrupt", None)
    with ieee_float32(device):  # full float32 on a GPU: the recorded metrics are float32 ones
        clean = _on(model.embed(images_to_tensor(dataset.images), batch_size), device)
        corrupt = None if twin is None else _on(model.embed(images_to_tensor(twin), batch_size), device)
    if not eta:
        return EmbeddedSet(clean, corrupt, labels)
    match = model.match
    eta_corrupt = None if corrupt is None else self_mismatch(corrupt, match).cpu().numpy()
    return EmbeddedSet(clean, corrupt, labels, self_mismatch(clean, match).cpu().numpy(), eta_corrupt, match)


def _on(emb: Embedding, device: torch.device) -> Embedding:
    """``emb`` on ``device`` (`EmbeddingNet.embed` returns host tensors)."""
    return emb if emb.mean.device == device else emb.to(device)
