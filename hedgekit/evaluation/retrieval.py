"""HIB's evaluation protocol on N-digit MNIST (Oh et al. 2019, sec. 4.3-4.4, App. G).

Choices where the paper is silent (each tested):

* Verification (Table 1 "AP"): 10k pairs, half matching, drawn within the clean test
  set ("clean") or within its corrupt twin ("corrupt"); the score is p(m|x1,x2)
  computed deterministically (`hedgekit.uncertainty.match_probability`).
* KNN (Table 1): probes are the clean test images; the gallery is the clean set
  ("clean") or the corrupt twin ("corrupt"). A probe never retrieves itself nor its
  own twin (gallery item with the same index is excluded). Neighbours are ranked by
  the match probability p(m|probe, gallery) (eq. 4), the similarity HIB trains for;
  for point embeddings this is the usual Euclidean KNN (p is decreasing in the
  distance), computed exactly. With stochastic embeddings, a broad (uncertain) gallery
  item matches no probe well and so rarely becomes a neighbour; ranking by the distance
  between mixture means instead (``rank="mean"``) ignores the variances: on our N=2,
  D=2 MoG-1 model the corrupt-gallery accuracy is 0.465 that way and 0.625 by match
  probability (measured). K = 5; "majority" vote (sec. 4.3) or "plurality" (App. G).
* Known unknowns (Table 2, Figure 5): items are binned by eta into 20 equal-count
  bins. KNN bins use the probe's eta; verification bins use the mean eta of the
  pair. Kendall's tau between bin index and performance, sign inverted.

Gallery cleaning (Taha et al. 2019, sec. 4.2, Table 2): `map_after_removing_uncertain` drops the
most uncertain (or random) gallery items and measures mAP and top-1 on what is left.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from hedgekit.data import NDigitSet
from hedgekit.evaluation import metrics as M
from hedgekit.evaluation.arrays import checked_array, same_length
from hedgekit.evaluation.embedded import EmbeddedSet, embed_set
from hedgekit.errors import InputError
from hedgekit.nets import EmbeddingNet
from hedgekit.uncertainty import MATRIX_POINTS, match_probability, match_probability_matrix

# Elements of a scoring block's largest intermediate on a CUDA device: 2^26 float32 values = 256 MB.
CUDA_BLOCK_ELEMENTS = 2**26


def verification(model: EmbeddingNet, es: EmbeddedSet, corrupt: bool, n_pairs: int = 10_000, seed: int = 0,
                 n_bins: int = 20) -> dict:
    """AP of p(m|x1,x2) on half-matching pairs, and per-eta-bin AP with its Kendall tau (sec. 4.3-4.4).

    Also returns the pair scores ``p``, labels ``same`` and mean eta ``pair_eta`` (Figure 9 data).
    """
    emb, eta = es.side(corrupt)
    n_pairs = min(n_pairs, 2 * (len(es.labels) // 2))
    i, j, same = M.verification_pairs(es.labels, n_pairs, seed)
    ti, tj = (torch.as_tensor(a, device=emb.mean.device) for a in (i, j))
    p = match_probability(emb[ti], emb[tj], model.match).cpu().numpy()
    pair_eta = M.pair_uncertainty(eta, i, j)
    per_bin = M.binned_average_precision(p, same, pair_eta, n_bins)
    return {"ap": M.average_precision(p, same), "ap_bins": per_bin, "tau": binned_tau(per_bin, eta),
            "p": p, "same": same, "pair_eta": pair_eta}


def knn(es: EmbeddedSet, probe_corrupt: bool = False, gallery_corrupt: bool = False, k: int = 5,
        vote: str = "majority", n_bins: int = 20, rank: str = "match", neighbours: np.ndarray | None = None) -> dict:
    """KNN identification accuracy, per-bin accuracy by the probe's eta, and its tau (sec. 4.3, App. G).

    ``rank="match"`` ranks gallery items by p(m|probe, gallery), ``"mean"`` by the distance
    between mixture means (module docstring); the two agree for point embeddings. The ranking is nearly all of
    the cost and does not depend on ``vote``: ``neighbours``, the (n, k) ``"neighbours"`` an earlier call
    returned for the same set, sides, ``k`` and ``rank``, skips it (App. G's plurality vote beside the majority).
    """
    if rank not in ("match", "mean"):
        raise InputError(f"rank must be 'match' or 'mean'; got {rank!r}")
    probe, eta = es.side(probe_corrupt)
    gallery, _ = es.side(gallery_corrupt)
    n = len(es.labels)
    if neighbours is not None:
        idx = np.asarray(neighbours)
        if idx.shape != (n, k) or not np.issubdtype(idx.dtype, np.integer) or (idx < 0).any() or (idx >= n).any():
            raise InputError(f"neighbours must be the ({n}, {k}) integer gallery indices an earlier knn call on this "
                             f"set returned; got shape {idx.shape}, dtype {idx.dtype}")
        return _knn_result(es.labels, idx, eta, vote, n_bins)
    device = probe.mean.device
    if rank == "mean" or (probe.is_point and gallery.is_point):
        score = M.euclidean_score_fn(probe.mixture_mean(), gallery.mixture_mean())
        chunk = block_rows(device, len(gallery) * probe.dim, cpu_rows=1024)
    else:
        if es.match is None:
            raise InputError("ranking stochastic embeddings by match probability needs the model's SoftMatch: "
                             "build the set with embed_set(model, test), or pass rank='mean'")
        pairs = len(gallery) * probe.n_components * gallery.n_components  # component pairs per probe
        chunk = block_rows(device, pairs * MATRIX_POINTS * probe.dim, cpu_rows=max(1, 2**16 // pairs))
        score = lambda rows: match_probability_matrix(probe[rows.to(device)], gallery, es.match)  # noqa: E731
    idx, _ = M.topk_neighbours(score, n, n, k, exclude=np.arange(n), chunk=chunk)
    return _knn_result(es.labels, idx, eta, vote, n_bins)


def _knn_result(labels: np.ndarray, idx: np.ndarray, eta, vote: str, n_bins: int) -> dict:
    acc, correct = M.knn_accuracy(labels[idx], labels, vote)
    per_bin = M.binned_accuracy(correct, eta, n_bins)
    return {"acc": acc, "correct": correct, "acc_bins": per_bin, "tau": binned_tau(per_bin, eta), "neighbours": idx}


def block_rows(device, row_elements: int, cpu_rows: int) -> int:
    """Probes `knn` scores per call on ``device``, given the elements one probe's scores take.

    * CPU: ``cpu_rows``, the caller's cache-sized block (Euclidean: 1,024 probes; match probability:
      ~2^16 component pairs, 2x faster than 2^21, measured). These are the blocks the shipped checkpoints'
      metrics were computed with, so CPU results stay bit-identical.
    * CUDA: as many probes as fit `CUDA_BLOCK_ELEMENTS` (256 MB of float32 in the largest intermediate,
      the (probes, gallery, component pairs, QMC points, D) array of `match_probability_matrix`). Each
      call has fixed costs (kernel launches, host synchronisations); with cache-sized blocks a 10k gallery
      takes ~1,700 calls per KNN and those costs, not the arithmetic, set the time. The memory is still
      checked by `hedgekit.checks.check_memory` where the block is scored.
    * Other devices (e.g. MPS, whose memory the CPU shares): the CPU's blocks.
    """
    if torch.device(device).type != "cuda":
        return cpu_rows
    return max(1, CUDA_BLOCK_ELEMENTS // row_elements)


def binned_tau(per_bin: np.ndarray, eta: np.ndarray) -> float:
    """Kendall tau, or NaN when it means nothing: eta constant (point models: the bins would
    just follow input order) or every bin equally good."""
    finite = per_bin[np.isfinite(per_bin)]
    if np.ptp(eta) == 0 or len(finite) < 2 or np.all(finite == finite[0]):
        return float("nan")
    return M.kendall_tau_bins(per_bin)


def table1_metrics(model: EmbeddingNet, test: NDigitSet, seed: int = 0, n_pairs: int = 10_000,
                   progress: bool = False, with_knn: bool = True) -> dict:
    """HIB Table 1 (AP and KNN, clean and corrupt) plus Table 2's taus and variance diagnostics.

    ``var_ratio`` = mean total variance on corrupt / clean inputs: the variance-collapse
    check of the design notes (HIB's "corrupt inputs get larger ellipses", Fig. 3).
    ``progress`` shows a tqdm bar over the five stages (embedding, then AP and KNN on each side).
    ``with_knn=False`` leaves out the KNN stages and the ``knn_*`` / ``tau_knn_*`` keys: for a HIB model
    they rank every probe against the whole gallery by match probability, ~90% of the time.
    """
    from tqdm.auto import tqdm

    if not isinstance(with_knn, bool):
        raise InputError(f"with_knn must be True or False; got {with_knn!r}")
    bar = tqdm(total=5, desc=f"evaluate ({len(test)} images): embed", disable=not progress, leave=False)
    es = embed_set(model, test)
    out: dict = {}
    for name, corrupt in (("clean", False), ("corrupt", True)):
        bar.update()
        bar.set_description(f"evaluate ({len(test)} images): AP {name}")
        v = verification(model, es, corrupt, n_pairs, seed)
        bar.update()
        out[f"ap_{name}"], out[f"tau_ap_{name}"] = v["ap"], v["tau"]
        if with_knn:
            bar.set_description(f"evaluate ({len(test)} images): KNN {name}")
            kn = knn(es, probe_corrupt=False, gallery_corrupt=corrupt)
            out[f"knn_{name}"], out[f"tau_knn_{name}"] = kn["acc"], kn["tau"]
    var_clean = float(es.clean.total_var().mean())
    var_corrupt = float(es.corrupt.total_var().mean())
    out.update(var_clean=var_clean, var_corrupt=var_corrupt,
               var_ratio=var_corrupt / var_clean if var_clean > 0 else float("nan"),
               eta_clean=float(es.eta_clean.mean()), eta_corrupt=float(es.eta_corrupt.mean()))
    bar.update()
    bar.close()
    return {k: float(v) for k, v in out.items()}


def map_after_removing_uncertain(query_emb, query_labels, gallery_emb, gallery_labels, gallery_uncertainty,
                                 fractions: Sequence[float], rng=None, random: bool = False) -> list[dict]:
    """mAP and top-1 after removing a fraction of the gallery (Taha et al. 2019, Table 2 "cleaning").

    For each fraction f, the ``round(f * G)`` gallery items with the largest uncertainty are removed
    (equal uncertainties: the lower gallery index goes first), or, with ``random=True``, that many
    items chosen at random; then every
    query is ranked against the rest by Euclidean distance (`metrics.retrieval_average_precision`,
    `metrics.top_k_accuracy`). Random removals are nested: one permutation drawn from ``rng`` serves
    every fraction, so a larger fraction removes a superset. ``rng`` is a ``numpy.random.Generator``,
    an int seed, or None (seed 0, so results do not flicker). ``gallery_uncertainty`` is ignored
    (but still checked) when ``random=True``.

    Returns:
        One dict per fraction, in the given order: ``fraction``, ``n_removed``, ``map`` (mean AP over
        queries that still have a relevant gallery item), ``top1``, ``removed`` (int array of removed
        gallery indices, most uncertain first).
    """
    gl = checked_array(gallery_labels, "gallery_labels", int)
    u = checked_array(gallery_uncertainty, "gallery_uncertainty", float)
    g = checked_array(gallery_emb, "gallery_emb", float, 2)
    same_length(gallery_emb=g, gallery_labels=gl, gallery_uncertainty=u)
    fractions = [float(f) for f in np.atleast_1d(np.asarray(fractions, dtype=float))]
    bad = [f for f in fractions if not 0.0 <= f < 1.0]
    if not fractions or bad:
        raise InputError(f"fractions must be a non-empty list of numbers in [0, 1); got {fractions}")
    if random:
        gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(0 if rng is None else rng)
        order = gen.permutation(len(gl))
    else:
        order = np.argsort(-u, kind="stable")
    out = []
    for f in fractions:
        n_removed = int(round(f * len(gl)))
        if n_removed >= len(gl):
            raise InputError(f"removing fraction {f} of {len(gl)} gallery items leaves none")
        keep = np.sort(order[n_removed:])
        out.append({"fraction": f, "n_removed": n_removed,
                    "map": M.mean_average_precision(query_emb, query_labels, g[keep], gl[keep]),
                    "top1": M.top_k_accuracy(query_emb, query_labels, g[keep], gl[keep], ks=(1,))[1],
                    "removed": order[:n_removed].copy()})
    return out
