"""Episodes for prototype models (SPE sec. 3 and 4, App. A.3 and E) and their evaluation.

An episode holds n classes; for each, k *support* instances (they form the prototype) and q *query*
instances (they are classified), all distinct images. Episode classes are relabelled 0..n-1 in the
order of ``Episode.classes``.

Evaluation (SPE App. A.3): "the mean over 1000 random test episodes"; 2-digit MNIST episodes hold all 70
seen (or all 30 unseen) classes with 50 support instances per class. Support and query are independently
clean or corrupt (App. E): a corrupt set takes the occluded twin (``NDigitSet.corrupt``, every digit
occluded) of the same images. The whole test set is embedded once, clean and corrupt
(`embed_dataset`, ~4 CPU-s for 2 x 10k 2-digit images); episodes only index those embeddings.
Measured on one CPU thread, 70-way episodes, 50 support + 5 query per class: PN ~1 ms per episode
(1000 episodes in ~1 s); SPE with the paper's naive 200-sample evaluation ~28 ms per episode
(~30 s per 1000; the 350 x 200 x 70 class likelihoods per episode are the irreducible cost).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from .distributions import Embedding
from .errors import InputError

QUERY_PER_CLASS = 5  # default test queries per class; see evaluate_episodes for why


@dataclass(frozen=True)
class Episode:
    """Indices into a labelled set. Support and query are class-major (class 0's items first).

    classes: (n,) dataset labels of the episode's classes; episode label j means ``classes[j]``.
    support, support_labels: (n*k,) dataset indices and episode labels 0..n-1.
    query, query_labels: (n*q,) dataset indices and episode labels 0..n-1.
    """

    classes: np.ndarray
    support: np.ndarray
    support_labels: np.ndarray
    query: np.ndarray
    query_labels: np.ndarray

    @property
    def n_classes(self) -> int:
        return len(self.classes)


class EpisodeSampler:
    """Random episodes of ``n_classes`` x (``k_support`` + ``query_per_class``) distinct instances.

    Deterministic for a seed: the same seed gives the same sequence of episodes. Classes are drawn
    without replacement from the labels' classes (``n_classes=None``: all of them); within a class,
    support and query are drawn together without replacement, so they never share an instance.

    Args:
        labels: (N,) integer class labels of the set the indices refer to.
    """

    def __init__(self, labels, n_classes: int | None = None, k_support: int = 5, query_per_class: int = 5,
                 seed: int = 0):
        labels = np.asarray(labels.cpu() if isinstance(labels, Tensor) else labels)
        if labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer):
            raise InputError(f"labels must be a 1-D integer array; got {labels.dtype} {labels.shape}")
        if k_support < 1 or query_per_class < 0:
            raise InputError(f"need k_support >= 1 and query_per_class >= 0; got {k_support}, {query_per_class}")
        self.class_ids, inverse, counts = np.unique(labels, return_inverse=True, return_counts=True)
        n_all = len(self.class_ids)
        self.n_classes = n_all if n_classes is None else int(n_classes)
        if not 1 <= self.n_classes <= n_all:
            raise InputError(f"n_classes must be in 1..{n_all} (classes in the data); got {n_classes}")
        self.k, self.q = int(k_support), int(query_per_class)
        # Only classes with enough instances can take part.
        need = self.k + self.q
        usable = counts >= need
        if usable.sum() < self.n_classes:
            raise InputError(
                f"too few instances: an episode needs {need} = {self.k} support + {self.q} query per class, but only "
                f"{int(usable.sum())} classes have that many (smallest class has {counts.min()}); "
                f"lower k_support, query_per_class or n_classes")
        self.usable = np.flatnonzero(usable)
        # (n_all, max_count) table of each class's member indices, padded with -1
        order = np.argsort(inverse, kind="stable")
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        self.members = np.full((n_all, counts.max()), -1, dtype=np.int64)
        cols = np.arange(len(labels)) - np.repeat(starts, counts)
        self.members[inverse[order], cols] = order
        self.counts = counts
        self.rng = np.random.default_rng(seed)

    def sample(self) -> Episode:
        rng, n, k, q = self.rng, self.n_classes, self.k, self.q
        chosen = np.sort(rng.choice(self.usable, n, replace=False))  # positions in class_ids
        keys = rng.random((n, self.members.shape[1]))
        keys[self.members[chosen] < 0] = np.inf  # padding sorts last
        pick = np.take_along_axis(self.members[chosen], np.argsort(keys, axis=1)[:, : k + q], axis=1)  # (n, k+q)
        episode_labels = np.arange(n)
        return Episode(
            classes=self.class_ids[chosen],
            support=pick[:, :k].reshape(-1),
            support_labels=np.repeat(episode_labels, k),
            query=pick[:, k:].reshape(-1),
            query_labels=np.repeat(episode_labels, q),
        )

    def __iter__(self):
        return self

    def __next__(self) -> Episode:
        return self.sample()


# ----------------------------------------------------------------------------- evaluation
@dataclass(frozen=True)
class EmbeddedSet:
    """A labelled set embedded once: ``clean`` and (if the set has an occluded twin) ``corrupt``."""

    clean: Embedding
    corrupt: Embedding | None
    labels: np.ndarray


def images_to_tensor(images) -> Tensor:
    """uint8 or float images (N, H, W) / (N, C, H, W), numpy or torch -> float (N, C, H, W) in [0, 1]."""
    x = torch.as_tensor(images)
    x = x.float().div_(255.0) if x.dtype == torch.uint8 else x.float()
    return x.unsqueeze(1) if x.ndim == 3 else x


def embed_dataset(model, dataset, batch_size: int = 1024) -> EmbeddedSet:
    """Embed ``dataset.images`` (and ``dataset.corrupt`` if present) once with ``model.embed`` (eval mode).

    ``dataset``: anything with ``images`` and ``labels`` (e.g. `NDigitSet`, `LShapes`); an optional
    ``corrupt`` twin of the same shape (NDigitSet's test splits occlude every digit in it).
    """
    if not hasattr(dataset, "images") or not hasattr(dataset, "labels"):
        raise InputError(f"dataset needs .images and .labels; got {type(dataset).__name__}")
    labels = np.asarray(dataset.labels)
    if len(labels) != len(dataset.images):
        raise InputError(f"{len(dataset.images)} images but {len(labels)} labels")
    clean = model.embed(images_to_tensor(dataset.images), batch_size)
    twin = getattr(dataset, "corrupt", None)
    corrupt = None if twin is None else model.embed(images_to_tensor(twin), batch_size)
    return EmbeddedSet(clean, corrupt, labels)


def evaluate_episodes(
    model,
    head,
    dataset,
    n_episodes: int = 1000,
    n_classes: int | None = None,
    k_support: int = 50,
    query_per_class: int = QUERY_PER_CLASS,
    support_corrupt: bool = False,
    query_corrupt: bool = False,
    sampler: str | None = None,
    n_samples: int | None = None,
    seed: int = 0,
) -> tuple[float, float, np.ndarray]:
    """Mean and standard deviation of the query accuracy over random test episodes (SPE App. A.3).

    Args:
        model: an `EmbeddingNet` (ignored if ``dataset`` is already an `EmbeddedSet`).
        head: `SPE`, `PN`, or None for PN.
        dataset: an `NDigitSet`-like set (embedded here, once) or an `EmbeddedSet` from `embed_dataset`
            (reuse it across the clean/corrupt conditions).
        n_classes: classes per episode (None: all classes of the set; App. A.3 for 2-digit MNIST).
        k_support: support instances per class (50 in App. A.3).
        query_per_class: query instances per class. The paper does not say. 5 keeps the SPE evaluation
            (naive sampler, 200 samples) at ~28 ms per 70-class episode on one CPU thread (10: ~54 ms);
            the per-episode std grows (2.5% vs 1.7% at 64% accuracy) but over 1000 episodes the standard
            error of the mean (std / sqrt(1000) < 0.1%) stays far below the paper's rounding, and every
            2-digit test image is still a query in ~35 episodes.
        support_corrupt, query_corrupt: take support / query from the corrupt twin (App. E).
        sampler, n_samples: override the head's evaluation sampler (SPE default: naive, 200; App. B).
        seed: fixes both the episodes and the sampler noise.
    Returns:
        (mean accuracy, std over episodes, per-episode accuracies (n_episodes,)).
    """
    from .losses.prototypes import PN

    if n_episodes < 1:
        raise InputError(f"n_episodes must be >= 1; got {n_episodes}")
    data = dataset if isinstance(dataset, EmbeddedSet) else embed_dataset(model, dataset)
    if (support_corrupt or query_corrupt) and data.corrupt is None:
        raise InputError("this dataset has no corrupt twin (`corrupt` is None), so support_corrupt / "
                         "query_corrupt cannot be used")
    head = PN() if head is None else head
    episodes = EpisodeSampler(data.labels, n_classes, k_support, query_per_class, seed)
    support_set = data.corrupt if support_corrupt else data.clean
    query_set = data.corrupt if query_corrupt else data.clean
    generator = torch.Generator().manual_seed(seed)
    device = next(head.parameters()).device if any(True for _ in head.parameters()) else torch.device("cpu")
    support_set, query_set = support_set.to(device), query_set.to(device)
    if device.type != "cpu":
        generator = torch.Generator(device).manual_seed(seed)
    accs = np.empty(n_episodes)
    was_training = head.training
    head.eval()
    try:
        with torch.no_grad():
            for e in range(n_episodes):
                ep = episodes.sample()
                query, support = query_set[torch.as_tensor(ep.query)], support_set[torch.as_tensor(ep.support)]
                log_p = head.log_posterior(query, support, torch.as_tensor(ep.support_labels), ep.n_classes,
                                           sampler, n_samples, generator)
                pred = log_p.argmax(1).cpu().numpy()
                accs[e] = float((pred == ep.query_labels).mean())
    finally:
        head.train(was_training)
    return float(accs.mean()), float(accs.std()), accs
