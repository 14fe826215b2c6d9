"""Nearest neighbours and KNN votes (HIB Section 4.3 Table 1, Appendix G Tables 6-7; URL's R@1 ranks by them).

`topk_neighbours` finds the k highest-scoring gallery items of every probe in chunks of probes, ties to the lower
gallery index; the scores come from a score function (`euclidean_score_fn`, `cosine_score_fn`, or a match
probability). `knn_predict` and `knn_accuracy` vote over the neighbours' labels (majority or plurality). Split from
`hedgekit.evaluation.metrics`, which re-exports every public name here.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import torch

from hedgekit.checks import check_count
from hedgekit.errors import InputError
from hedgekit.evaluation.arrays import checked_array, same_length, to_numpy

__all__ = ["ScoreFn", "euclidean_score_fn", "cosine_score_fn", "topk_neighbours", "knn_predict", "knn_accuracy"]

ScoreFn = Callable[[torch.Tensor], torch.Tensor]


def euclidean_score_fn(probe, gallery) -> ScoreFn:
    """Score function for :func:`topk_neighbours`: minus the Euclidean distance.

    Args:
        probe: (P, D) embeddings of the queries.
        gallery: (G, D) embeddings searched.

    Returns:
        ``score_fn(probe_idx) -> Tensor (len(probe_idx), G)`` of ``-||p - g||``.
        Distances are computed exactly (no ``|a|^2 + |b|^2 - 2ab`` shortcut),
        so near-ties are ordered correctly.
    """
    p, g = _probe_and_gallery(probe, gallery)

    def score_fn(probe_idx: torch.Tensor) -> torch.Tensor:
        rows = p[probe_idx.to(p.device)]
        return -torch.cdist(rows, g, compute_mode="donot_use_mm_for_euclid_dist")

    return score_fn


def cosine_score_fn(probe, gallery) -> ScoreFn:
    """Score function for :func:`topk_neighbours`: the cosine similarity ``p^T g / (||p|| ||g||)``.

    The URL benchmark's similarity (its code L2-normalises the embeddings, then
    ranks by inner product). Like ``torch.nn.functional.normalize`` there, a zero
    embedding stays zero: its similarity to everything is 0.

    Args:
        probe: (P, D) embeddings of the queries.
        gallery: (G, D) embeddings searched.

    Returns:
        ``score_fn(probe_idx) -> Tensor (len(probe_idx), G)`` of cosine similarities.
    """
    p, g = (torch.nn.functional.normalize(x, dim=1) for x in _probe_and_gallery(probe, gallery))

    def score_fn(probe_idx: torch.Tensor) -> torch.Tensor:
        return p[probe_idx.to(p.device)] @ g.T

    return score_fn


def _probe_and_gallery(probe, gallery) -> tuple[torch.Tensor, torch.Tensor]:
    """Checked (P, D) and (G, D) float tensors on the probe's device: 2-D, same D, non-empty, finite."""
    p = probe if isinstance(probe, torch.Tensor) else torch.as_tensor(to_numpy(probe, "probe"))
    g = gallery if isinstance(gallery, torch.Tensor) else torch.as_tensor(to_numpy(gallery, "gallery"))
    p, g = p.detach(), g.detach()
    if p.ndim != 2 or g.ndim != 2:
        raise InputError(f"probe and gallery must be 2-D (n, D), got {tuple(p.shape)} and {tuple(g.shape)}")
    if p.shape[1] != g.shape[1]:
        raise InputError(f"probe has D={p.shape[1]} but gallery has D={g.shape[1]}")
    if p.shape[0] == 0 or g.shape[0] == 0:
        raise InputError("probe and gallery must not be empty")
    dtype = torch.float64 if torch.float64 in (p.dtype, g.dtype) else torch.float32
    p, g = p.to(dtype), g.to(device=p.device, dtype=dtype)
    if not (torch.isfinite(p).all() and torch.isfinite(g).all()):
        raise InputError("probe or gallery contains NaN or inf")
    return p, g


def _topk_stable(s: torch.Tensor, k: int):
    """Top-k of each row, largest first, ties -> lower column index first.

    Equal to ``torch.sort(s, descending=True, stable=True)[:, :k]`` but uses
    ``torch.topk`` (~70x faster); only rows with a tie at the k-th place are
    fully sorted.
    """
    vals, idx = torch.topk(s, k, dim=1)
    tie = (s >= vals[:, -1:]).sum(dim=1) > k  # more candidates than places
    if tie.any():
        sv, si = torch.sort(s[tie], dim=1, descending=True, stable=True)
        vals[tie], idx[tie] = sv[:, :k], si[:, :k]
    # order the chosen k by (score desc, index asc)
    idx, perm = torch.sort(idx, dim=1)
    vals = torch.gather(vals, 1, perm)
    vals, perm = torch.sort(vals, dim=1, descending=True, stable=True)
    idx = torch.gather(idx, 1, perm)
    return vals, idx


def topk_neighbours(
    score_fn: ScoreFn,
    n_probe: int,
    n_gallery: int,
    k: int,
    exclude=None,
    chunk: int = 1024,
):
    """The k closest gallery items of every probe, computed in chunks of probes.

    Used for KNN identification (HIB Section 4.3, Appendix G) and R@1 (URL).
    The full (n_probe, n_gallery) score matrix is never held in memory; only
    ``chunk`` rows at a time. The winners stay on the scores' device until all
    chunks are done (one finiteness check, one copy to the host), so a GPU does
    not wait for the host after every chunk; the result does not depend on
    ``chunk``.

    Args:
        score_fn: ``score_fn(probe_idx: LongTensor) -> Tensor (len(probe_idx),
            n_gallery)``; higher score = closer (e.g. minus a distance, a
            log match probability). Scores must be finite.
        n_probe, n_gallery: numbers of probes and gallery items.
        k: neighbours per probe, 1 <= k <= n_gallery (n_gallery - 1 when an
            item is excluded).
        exclude: optional int array (n_probe,): one gallery index per probe
            that may not be returned (-1 = none), e.g. the probe itself
            (``arange``) or its clean/corrupt twin.
        chunk: probes scored per call of ``score_fn``.

    Returns:
        ``(indices, scores)``: int64 array (n_probe, k) and float array
        (n_probe, k), closest first; equal scores -> lower gallery index first.
    """
    n_probe = check_count(n_probe, "n_probe")
    n_gallery = check_count(n_gallery, "n_gallery")
    k = check_count(k, "k")
    chunk = check_count(chunk, "chunk")
    excl = _checked_exclude(exclude, n_probe, n_gallery)
    available = n_gallery - (1 if excl is not None else 0)
    if k > available:
        raise InputError(
            f"k={k} is larger than the gallery ({n_gallery} items"
            + (", one excluded per probe)" if excl is not None else ")")
        )

    # The winners stay on the scores' device until the end: one finiteness check and one host transfer in
    # all, rather than a host synchronisation per chunk (on a GPU those, not the scoring, set the time).
    # The output is allocated once: small tensors kept per chunk fragment the CPU heap, and the next
    # chunk's large blocks then come from fresh pages (docs/speed.md, "Evaluation on a GPU").
    all_idx = all_vals = excl_t = None
    for start in range(0, n_probe, chunk):
        stop = min(start + chunk, n_probe)
        s = _chunk_scores(score_fn, start, stop, n_gallery)
        if excl is not None:
            if excl_t is None or excl_t.device != s.device:
                excl_t = torch.as_tensor(excl, device=s.device)
            s = _mask_excluded(s, excl_t[start:stop])
        vals, idx = _topk_stable(s, k)
        if all_vals is None:
            all_vals, all_idx = vals.new_empty((n_probe, k)), idx.new_empty((n_probe, k))
        all_vals[start:stop], all_idx[start:stop] = vals, idx
    # topk ranks NaN and +inf first, so checking the k winners catches any NaN/+inf in a row (and a real
    # -inf that made the cut) without a full pass over the scores.
    if not torch.isfinite(all_vals).all():
        raise InputError("score_fn returned NaN or inf scores")
    return all_idx.cpu().numpy(), all_vals.cpu().numpy()


def _checked_exclude(exclude, n_probe: int, n_gallery: int) -> np.ndarray | None:
    """`topk_neighbours`' ``exclude``, checked: int64 (n_probe,) of -1 (none) or gallery indices; None when it is
    None or excludes nothing."""
    if exclude is None:
        return None
    excl = checked_array(exclude, "exclude", int)
    if len(excl) != n_probe:
        raise InputError(f"length mismatch: exclude={len(excl)}, n_probe={n_probe} (they must be equal)")
    if excl.min() < -1 or excl.max() >= n_gallery:
        raise InputError(f"exclude values must be -1 (none) or a gallery index in [0, {n_gallery})")
    return excl if (excl >= 0).any() else None


def _chunk_scores(score_fn: ScoreFn, start: int, stop: int, n_gallery: int) -> torch.Tensor:
    """The scores of probes ``start .. stop - 1`` (`topk_neighbours`' ``score_fn``), checked: a detached float32 or
    float64 tensor (stop - start, n_gallery) on the device ``score_fn`` used (ints, float16, bfloat16 -> float64)."""
    s = score_fn(torch.arange(start, stop, dtype=torch.long))
    if not isinstance(s, torch.Tensor):
        s = torch.as_tensor(to_numpy(s, "score_fn output"))
    s = s.detach()
    if tuple(s.shape) != (stop - start, n_gallery):
        raise InputError(
            f"score_fn returned shape {tuple(s.shape)} for {stop - start} probes; "
            f"expected ({stop - start}, {n_gallery})"
        )
    if s.dtype not in (torch.float32, torch.float64):
        s = s.double()  # ints, float16, bfloat16
    return s


def _mask_excluded(s: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
    """``s`` with each row's excluded gallery column (``e[row]`` >= 0) at -inf; a row with ``e`` -1 is unchanged."""
    col = e.clamp_min(0).unsqueeze(1)  # rows without an exclusion keep their own score there
    return s.scatter(1, col, torch.where(e.unsqueeze(1) >= 0, -torch.inf, s.gather(1, col)))


_VOTES = ("majority", "plurality")


def knn_predict(neighbour_labels, vote: str = "majority"):
    """Class predicted by a vote of the k nearest neighbours.

    ``vote="majority"`` (HIB Section 4.3, Table 1): the class held by strictly
    more than k/2 of the neighbours; if no class has that (e.g. 2 of k = 4, or
    2-2-1 of k = 5) the prediction is -1 ("no majority"), which is never
    correct. ``vote="plurality"`` (HIB Appendix G, Table 6): the most frequent
    class among the k; a tie between classes is broken by taking, among the
    tied classes, the class of the closest neighbour.

    Args:
        neighbour_labels: (P, k) non-negative int labels of each probe's
            neighbours, closest first (as returned by :func:`topk_neighbours`).
        vote: "majority" or "plurality".

    Returns:
        ``(pred, support)``: int64 arrays (P,); ``pred`` the predicted class
        (-1 = no majority) and ``support`` the number of the k neighbours
        holding the most frequent class.
    """
    if vote not in _VOTES:
        raise InputError(f"vote must be one of {_VOTES}, got {vote!r}")
    nl = checked_array(neighbour_labels, "neighbour_labels", int, ndim=2)
    if nl.shape[1] == 0:
        raise InputError("neighbour_labels has k = 0 columns")
    if nl.min() < 0:
        raise InputError("neighbour_labels must be non-negative (-1 is reserved for 'no majority')")
    k = nl.shape[1]
    # counts[p, j] = how many of the k neighbours share neighbour j's class
    counts = (nl[:, :, None] == nl[:, None, :]).sum(axis=2)
    support = counts.max(axis=1)
    first = np.argmax(counts == support[:, None], axis=1)  # closest of the tied classes
    pred = nl[np.arange(len(nl)), first]
    if vote == "majority":
        pred = np.where(2 * support > k, pred, -1)
    return pred.astype(np.int64), support.astype(np.int64)


def knn_accuracy(neighbour_labels, true_labels, vote: str = "majority"):
    """KNN identification accuracy (HIB Section 4.3 Table 1; Appendix G Table 6).

    See :func:`knn_predict` for the two votes. With ``vote="majority"`` a probe
    is correct only if strictly more than k/2 neighbours carry its true class.

    Returns:
        ``(accuracy, correct)``: float and bool array (P,).
    """
    pred, _ = knn_predict(neighbour_labels, vote)
    true = checked_array(true_labels, "true_labels", int)
    same_length(neighbour_labels=pred, true_labels=true)
    correct = pred == true
    return float(correct.mean()), correct
