"""What the SPE lessons of notebooks 06 and 07 measure: corrupt support images in an episode.

SPE's claim (Scott et al. 2019, sec. 3.1, eq. 5) is that a prototype built as a product of Gaussians
discounts an uncertain support image, where a Prototypical Network averages it in with full weight.
The lessons test it on *mixed* support sets: in every episode each class has ``n_corrupt`` corrupt and
``k_support - n_corrupt`` clean support images, the queries are clean.

* `occlude_squares` / `square_occlusion`: a black square over part of each image, the L-shape analogue
  of N-digit MNIST's occlusion (HIB App. A). The paper's per-pixel hue noise hardly removes evidence from
  our renderings (docs/recipes.md, "Figure 3: our images keep both factors"), so the lesson of notebook 06
  uses this corruption instead.
* `mixed_support_accuracy`: the episode accuracy with such mixed support sets, for an `SPE` head or a
  `PN` head (the PN rule on the same embeddings' means).
"""
from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from hedgekit.checks import check_count
from hedgekit.data.samplers import EpisodeSampler
from hedgekit.embedding import Embedding
from hedgekit.errors import InputError
from hedgekit.methods.pn import PN
from hedgekit.methods.fast.spe import SPE


def occlude_squares(images: Tensor, rng: np.random.Generator, side: float = 0.6) -> Tensor:
    """A copy of ``images`` (B, C, H, W) with one black square of ``side`` x min(H, W) pixels per image.

    The square's top-left corner is uniform over the positions that keep it inside the image
    (``rng.integers``, one (top, left) pair per image, in order).
    """
    if not isinstance(images, Tensor) or images.ndim != 4:
        raise InputError(f"images must be a (B, C, H, W) tensor; got {getattr(images, 'shape', type(images).__name__)}")
    if not isinstance(rng, np.random.Generator):
        raise InputError(f"rng must be a numpy Generator (np.random.default_rng(seed)); got {type(rng).__name__}")
    if not 0.0 < float(side) <= 1.0:
        raise InputError(f"side must be a fraction of the image side in (0, 1]; got {side}")
    h, w = images.shape[-2:]
    s = max(1, int(round(float(side) * min(h, w))))
    out = images.clone()
    corners = rng.integers(0, [h - s + 1, w - s + 1], size=(len(images), 2))
    for img, (top, left) in zip(out, corners):
        img[:, top:top + s, left:left + s] = 0
    return out


def square_occlusion(p_occlude: float = 0.5, side: float = 0.6):
    """An augmentation ``fn(x, rng) -> x`` (`hedgekit.training.episodic.fit_episodic`'s ``augment``): each image of
    the batch is occluded by `occlude_squares` with probability ``p_occlude``."""
    if not 0.0 <= float(p_occlude) <= 1.0:
        raise InputError(f"p_occlude must be in [0, 1]; got {p_occlude}")
    if not 0.0 < float(side) <= 1.0:
        raise InputError(f"side must be a fraction of the image side in (0, 1]; got {side}")

    def augment(x: Tensor, rng: np.random.Generator) -> Tensor:
        hit = torch.from_numpy(rng.random(len(x)) < p_occlude)
        if not hit.any():
            return x
        x = x.clone()
        x[hit] = occlude_squares(x[hit], rng, side)
        return x

    return augment


def mixed_support_accuracy(head: SPE | PN | None, clean: Embedding, corrupt: Embedding, labels, n_corrupt: int,
                           k_support: int = 4, query_per_class: int = 10, n_episodes: int = 100,
                           n_classes: int | None = None, n_samples: int = 50, seed: int = 0) -> tuple[float, float]:
    """(mean accuracy, its standard error) over episodes whose support mixes corrupt and clean images.

    Each episode (`EpisodeSampler`: ``n_classes`` classes, None = all, x (``k_support`` + ``query_per_class``)
    distinct images) takes the first ``n_corrupt`` support images of every class from ``corrupt`` (the
    embeddings of the corrupt twins of the same images), the rest of the support and all queries from
    ``clean``. ``head`` None or `PN` classifies with the PN rule on the embedding means; an `SPE` with its
    evaluation sampler (naive, ``n_samples`` samples; the noise is seeded by ``seed``).
    """
    if not isinstance(clean, Embedding) or not isinstance(corrupt, Embedding):
        raise InputError("clean and corrupt must be hedgekit Embeddings of the same images")
    if clean.mean.shape != corrupt.mean.shape:
        raise InputError(f"clean {tuple(clean.mean.shape)} and corrupt {tuple(corrupt.mean.shape)} embeddings "
                         "must have one row per image, the same images in the same order")
    k_support, n_episodes = check_count(k_support, "k_support"), check_count(n_episodes, "n_episodes")
    if isinstance(n_corrupt, bool) or not isinstance(n_corrupt, (int, np.integer)) or not 0 <= n_corrupt <= k_support:
        raise InputError(f"n_corrupt must be an integer in 0..k_support = {k_support}; got {n_corrupt!r}")
    labels = np.asarray(labels)
    if labels.shape != (len(clean),):
        raise InputError(f"labels must have shape ({len(clean)},), one per embedded image; got {labels.shape}")
    head = PN() if head is None else head
    episodes = EpisodeSampler(labels, n_classes, k_support, query_per_class, seed)
    take_corrupt = torch.from_numpy(np.tile(np.arange(k_support) < n_corrupt, episodes.n_classes))[:, None, None]
    sampling = dict(n_samples=n_samples, generator=torch.Generator().manual_seed(seed)) if isinstance(head, SPE) else {}
    accs = np.empty(n_episodes)
    with torch.no_grad():
        for e in range(n_episodes):
            ep = episodes.sample()
            s_idx = torch.as_tensor(ep.support)
            support = Embedding.mixture(torch.where(take_corrupt, corrupt.mean[s_idx], clean.mean[s_idx]),
                                        torch.where(take_corrupt, corrupt.var[s_idx], clean.var[s_idx]))
            log_p = head.log_posterior(clean[torch.as_tensor(ep.query)], support, torch.as_tensor(ep.support_labels),
                                       ep.n_classes, **sampling)
            accs[e] = float((log_p.argmax(1).numpy() == ep.query_labels).mean())
    return float(accs.mean()), float(accs.std(ddof=1) / np.sqrt(n_episodes)) if n_episodes > 1 else 0.0
