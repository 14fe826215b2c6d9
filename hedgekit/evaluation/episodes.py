"""Episodes for prototype models (SPE sec. 3 and 4, App. A.3 and E) and their evaluation.

An episode holds n classes; for each, k *support* instances (they form the prototype) and q *query*
instances (they are classified), all distinct images. Episode classes are relabelled 0..n-1 in the
order of ``Episode.classes``.

Evaluation (SPE App. A.3): "the mean over 1000 random test episodes"; 2-digit MNIST episodes hold all 70
seen (or all 30 unseen) classes with 50 support instances per class. Support and query are independently
clean or corrupt (App. E): a corrupt set takes the occluded twin (``NDigitSet.corrupt``, every digit
occluded) of the same images. The whole test set is embedded once, clean and corrupt
(`hedgekit.evaluation.embedded.embed_set`, ~4 CPU-s for 2 x 10k 2-digit images); episodes only index those
embeddings, so 1000 PN episodes take ~1 s and SPE's naive 200-sample rule ~30 s (docs/recipes.md).
"""
from __future__ import annotations


import numpy as np
import torch

from hedgekit.checks import check_count
from hedgekit.errors import InputError
from hedgekit.data.samplers import EpisodeSampler
from hedgekit.evaluation.embedded import EmbeddedSet, embed_set
from hedgekit.methods.pn import PN
from hedgekit.methods.fast.spe import SPE

QUERY_PER_CLASS = 5  # default test queries per class; see evaluate_episodes for why


# ----------------------------------------------------------------------------- evaluation
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
        dataset: an `NDigitSet`-like set (embedded here, once) or an `EmbeddedSet` from `embed_set`
            (reuse it across the clean/corrupt conditions).
        n_classes: classes per episode, >= 2 (None: all classes of the set, App. A.3 for 2-digit MNIST; the
            set must hold >= 2). One class would score 1.0 whatever the model: an InputError.
        k_support: support instances per class (50 in App. A.3), >= 1.
        query_per_class: query instances per class, >= 1. The paper does not say. 5 keeps the SPE evaluation
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
    n_episodes = check_count(n_episodes, "n_episodes")
    k_support = check_count(k_support, "k_support")
    query_per_class = check_count(query_per_class, "query_per_class")  # no queries, no accuracy to average
    if n_classes is not None:
        _check_classes(check_count(n_classes, "n_classes"), "n_classes")
    data = dataset if isinstance(dataset, EmbeddedSet) else embed_set(model, dataset, eta=False)
    if (support_corrupt or query_corrupt) and data.corrupt is None:
        raise InputError("this dataset has no corrupt twin (`corrupt` is None), so support_corrupt / "
                         "query_corrupt cannot be used")
    head = PN() if head is None else head
    episodes = EpisodeSampler(data.labels, n_classes, k_support, query_per_class, seed)
    _check_classes(episodes.n_classes, "the data set's classes (n_classes=None: all of them)")
    support_set = data.corrupt if support_corrupt else data.clean
    query_set = data.corrupt if query_corrupt else data.clean
    generator = torch.Generator().manual_seed(seed)
    device = next(head.parameters()).device if any(True for _ in head.parameters()) else torch.device("cpu")
    support_set, query_set = support_set.to(device), query_set.to(device)
    if device.type != "cpu":
        generator = torch.Generator(device).manual_seed(seed)
    sampling = dict(sampler=sampler, n_samples=n_samples, generator=generator) if isinstance(head, SPE) else {}
    accs = np.empty(n_episodes)
    was_training = head.training
    head.eval()
    try:
        with torch.no_grad():
            for e in range(n_episodes):
                ep = episodes.sample()
                query, support = query_set[torch.as_tensor(ep.query)], support_set[torch.as_tensor(ep.support)]
                log_p = head.log_posterior(query, support, torch.as_tensor(ep.support_labels), ep.n_classes, **sampling)
                pred = log_p.argmax(1).cpu().numpy()
                accs[e] = float((pred == ep.query_labels).mean())
    finally:
        head.train(was_training)
    return float(accs.mean()), float(accs.std()), accs


def _check_classes(n: int, what: str) -> None:
    """InputError for episodes of fewer than 2 classes: every query of a 1-class episode is right by construction."""
    if n < 2:
        raise InputError(f"an episode needs at least 2 classes to classify between; got {what} = {n}, which would "
                         "report accuracy 1.0 whatever the model (every query has only its own class to go to)")
