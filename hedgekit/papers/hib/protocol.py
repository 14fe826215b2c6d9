"""HIB's evaluation repeated as in the paper, and the side-by-side tables.

`hedgekit.evaluation.retrieval` implements one evaluation (Table 1 / Table 2 protocol, its
choices documented there). The paper adds: "Because the uncertainty measure
includes a sampling step, we repeat each evaluation 10 times, and report the mean
results, with standard deviations ranging from 0.02 to 0.12" (sec. 4.4). So one
*repetition* r here is

* eta(x) estimated by Monte Carlo as the paper does (eq. 5 and 9 with K = 8
  samples per input, fresh samples for every repetition, `eta_mc`) — the
  sampling step the paper repeats; `hedgekit.uncertainty.self_mismatch` is the
  deterministic version used everywhere else;
* a fresh draw of the 10k half-matching verification pairs (seed ``seed + r``);
  the match probability p(m|x1,x2) itself is computed deterministically;
* the KNN neighbours, which do not depend on any sampling, computed once; only
  their eta bins change between repetitions.

`evaluate_repeated` returns every repetition's numbers (Table 1 AP/KNN, Table 2
taus, Appendix G plurality KNN for the three gallery/probe variants with their
taus, the per-bin curves of Figure 5) and, from repetition 0, the verification
scores needed for the match-score distributions of Figure 9.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch

from hedgekit.checks import check_count, check_memory
from hedgekit.evaluation import metrics as M
from hedgekit.papers.hib import numbers
from hedgekit.data import NDigitSet, class_split, load_ndigit
from hedgekit.embedding import Embedding
from hedgekit.errors import InputError
from hedgekit.evaluation.retrieval import binned_tau, knn, verification
from hedgekit.evaluation.embedded import EmbeddedSet, embed_set
from hedgekit.nets import EmbeddingNet
from hedgekit.nets.match import SoftMatch

__all__ = ["eta_mc", "KNN_VARIANTS", "RepeatedEvaluation", "pool_seeds", "evaluate_repeated", "binned_curve",
           "match_scores_by_bin", "table1_frame", "table2_frame", "table4_frame", "table6_frame", "table7_frame",
           "table5_frame", "display_frame", "TABLE1_KEYS", "TABLE2_KEYS", "dataset_counts",
           "table3_frame"]

TABLE1_KEYS = tuple(k for k, _ in numbers.TABLE1_ROWS)
TABLE2_KEYS = tuple(k for k, _ in numbers.TABLE2_ROWS)
# Appendix G: (gallery, probe) variants of plurality KNN (Tables 6 and 7).
KNN_VARIANTS = (("clean", "clean"), ("clean", "corrupt"), ("corrupt", "clean"))


@torch.no_grad()
def eta_mc(emb: Embedding, match: SoftMatch, k: int = 8, generator: torch.Generator | None = None) -> np.ndarray:
    """(B,) eta(x) = 1 - p(m|x,x) by the paper's Monte Carlo estimate (HIB eq. 5 and 9).

    Two independent sets of K samples z1, z2 ~ p(z|x) (stratified over mixture
    components, as in training) and the mean of sigmoid(-a||z1 - z2|| + b) over the
    K x K pairs. For point embeddings every sample is the mean, so eta = 1 - sigmoid(b).
    """
    k = check_count(k, "k (Monte-Carlo samples per input)")
    check_memory(3 * len(emb) * k * k, f"eta by Monte Carlo with K={k} on {len(emb)} inputs",
                 "use a smaller K (the paper uses K = 8) or `hedgekit.uncertainty.self_mismatch`")
    z1 = emb.sample(k, generator)
    z2 = emb.sample(k, generator)
    d = torch.cdist(z1, z2)  # (B, K, K)
    return (1.0 - match(d).mean((1, 2))).numpy().astype(np.float64)


@dataclass
class RepeatedEvaluation:
    """Every repetition's numbers for one model (see the module docstring).

    values: metric -> (R,) array. Keys: ``ap_clean, ap_corrupt, knn_clean, knn_corrupt``
        (Table 1), ``tau_*`` (Table 2), ``knnp_<gallery>_<probe>`` and
        ``tau_knnp_<gallery>_<probe>`` (Tables 6, 7).
    bins: ``ap_clean`` etc. -> (R, n_bins) per-eta-bin performance (Figure 5).
    pairs: split -> dict(p, same, pair_eta) of repetition 0 (Figure 9).
    source: where the numbers came from, when they are one trained seed's among several (e.g. "3 seeds: 1 from a
        checkpoint on this machine, 2 from the ledger (…)", `hedgekit.zoo.ledger.seed_sources`); "".
    """

    label: str
    n_digits: int
    dim: int
    repeats: int
    n_images: int
    values: dict = field(default_factory=dict)
    bins: dict = field(default_factory=dict)
    pairs: dict = field(default_factory=dict)
    var_clean: float = math.nan
    var_corrupt: float = math.nan
    eta_clean: float = math.nan
    eta_corrupt: float = math.nan
    source: str = ""

    def mean(self, key: str) -> float:
        v = self.values.get(key)
        return float(np.nanmean(v)) if v is not None and np.isfinite(v).any() else math.nan

    def std(self, key: str) -> float:
        v = self.values.get(key)
        if v is None or np.isfinite(v).sum() < 2:
            return math.nan
        return float(np.nanstd(v, ddof=1))

    def summary(self) -> dict[str, float]:
        return {k: self.mean(k) for k in self.values}

    @classmethod
    def from_metrics(cls, label: str, n_digits: int, dim: int, metrics: dict, n_images: int) -> "RepeatedEvaluation":
        """One evaluation's numbers (e.g. those recorded in a checkpoint by `hedgekit.zoo`) as a
        single repetition, so the table builders below serve them too."""
        res = cls(label, n_digits, dim, 1, n_images,
                  values={k: np.array([v], dtype=float) for k, v in metrics.items()
                          if k.startswith(("ap_", "knn_", "knnp_", "tau_"))})
        for k in ("var_clean", "var_corrupt", "eta_clean", "eta_corrupt"):
            setattr(res, k, float(metrics.get(k, math.nan)))
        return res

    @property
    def var_ratio(self) -> float:
        return self.var_corrupt / self.var_clean if self.var_clean > 0 else math.nan


def pool_seeds(seeds: dict) -> dict:
    """(N, D, label) -> evaluations per trained seed, pooled into one `RepeatedEvaluation` per key whose
    repetitions are the seeds: each metric's value r is seed r's mean, so `RepeatedEvaluation.mean` is the mean
    over seeds and `RepeatedEvaluation.std` the seed-to-seed spread (ddof = 1), and `table1_frame` shows them
    as its "ours" and "±" columns. ``var_*`` and ``eta_*`` are averaged over the seeds."""
    out = {}
    for key, evs in seeds.items():
        evs = list(evs)
        if not evs or not all(isinstance(e, RepeatedEvaluation) for e in evs):
            raise InputError(f"pool_seeds: {key} needs a non-empty list of RepeatedEvaluation (one per seed), "
                             f"got {evs!r:.80}")
        names = sorted(set().union(*(e.values for e in evs)))
        pooled = RepeatedEvaluation(evs[0].label, evs[0].n_digits, evs[0].dim, len(evs), evs[0].n_images,
                                    values={k: np.array([e.mean(k) for e in evs]) for k in names})
        for f in ("var_clean", "var_corrupt", "eta_clean", "eta_corrupt"):
            vals = [getattr(e, f) for e in evs if math.isfinite(getattr(e, f))]
            setattr(pooled, f, float(np.mean(vals)) if vals else math.nan)
        out[key] = pooled
    return out


def evaluate_repeated(model: EmbeddingNet, test: NDigitSet, label: str, repeats: int = 10, k: int = 8,
                      n_pairs: int = 10_000, seed: int = 0, n_bins: int = 20, plurality: bool = True,
                      es: EmbeddedSet | None = None) -> RepeatedEvaluation:
    """Table 1/2 (and App. G Tables 6/7 when ``plurality``) evaluated ``repeats`` times.

    Args:
        model: trained embedding model; ``label`` its Table 1 column ("point", "MoG-1", ...).
        test: the seen-class test split (clean images and their corrupt twins).
        k: Monte-Carlo samples per input for eta (paper: K = 8).
        es: optionally the already embedded test set (`hedgekit.evaluation.retrieval.embed_set`).
    """
    if repeats < 1:
        raise InputError(f"repeats must be >= 1; got {repeats}")
    es = embed_set(model, test) if es is None else es
    res = RepeatedEvaluation(label, test.n_digits, es.clean.dim, repeats, len(es.labels))
    res.var_clean = float(es.clean.total_var().mean())
    res.var_corrupt = float(es.corrupt.total_var().mean())
    res.eta_clean, res.eta_corrupt = float(es.eta_clean.mean()), float(es.eta_corrupt.mean())
    # KNN: neighbours are fixed (no sampling); only the eta bins change per repetition. Each (probe, gallery)
    # side pair is ranked once: the plurality vote reuses the majority vote's neighbours where the sides agree.
    ranked: dict[tuple[bool, bool], np.ndarray] = {}

    def knn_correct(probe_corrupt: bool, gallery_corrupt: bool, vote: str) -> np.ndarray:
        sides = (probe_corrupt, gallery_corrupt)
        out = knn(es, probe_corrupt, gallery_corrupt, vote=vote, n_bins=n_bins, neighbours=ranked.get(sides))
        ranked[sides] = out["neighbours"]
        return out["correct"]

    knn_fixed = {f"knn_{g}": knn_correct(False, g == "corrupt", "majority") for g in ("clean", "corrupt")}
    if plurality:
        for g, p in KNN_VARIANTS:
            knn_fixed[f"knnp_{g}_{p}"] = knn_correct(p == "corrupt", g == "corrupt", "plurality")
    vals: dict[str, list] = {}
    bins: dict[str, list] = {}
    gen = torch.Generator().manual_seed(seed)
    for r in range(repeats):
        eta_c = eta_mc(es.clean, model.match, k, gen)
        eta_o = eta_mc(es.corrupt, model.match, k, gen)
        es_r = EmbeddedSet(es.clean, es.corrupt, es.labels, eta_c, eta_o, es.match)
        for split, corrupt in (("clean", False), ("corrupt", True)):
            v = verification(model, es_r, corrupt, n_pairs, seed + r, n_bins)
            vals.setdefault(f"ap_{split}", []).append(v["ap"])
            vals.setdefault(f"tau_ap_{split}", []).append(v["tau"])
            bins.setdefault(f"ap_{split}", []).append(v["ap_bins"])
            if r == 0:
                res.pairs[split] = {key: v[key] for key in ("p", "same", "pair_eta")}
        for key, correct in knn_fixed.items():
            probe_corrupt = key.endswith("_corrupt") and key.startswith("knnp_")
            eta = eta_o if probe_corrupt else eta_c  # bins follow the probe's eta
            per_bin = M.binned_accuracy(correct, eta, n_bins)
            vals.setdefault(key, []).append(float(correct.mean()))
            vals.setdefault("tau_" + key, []).append(binned_tau(per_bin, eta))
            bins.setdefault(key, []).append(per_bin)
    res.values = {k_: np.asarray(v, dtype=float) for k_, v in vals.items()}
    res.bins = {k_: np.vstack(v) for k_, v in bins.items()}
    return res


def binned_curve(performance_bins: np.ndarray) -> pd.DataFrame:
    """Figure 5 data: per-bin mean and std over repetitions of an (R, n_bins) array."""
    a = np.atleast_2d(np.asarray(performance_bins, dtype=float))
    with np.errstate(all="ignore"):
        mean = np.nanmean(a, 0)
        std = np.nanstd(a, 0, ddof=1) if a.shape[0] > 1 else np.zeros(a.shape[1])
    return pd.DataFrame({"bin": np.arange(a.shape[1]), "mean": mean, "std": std})


def match_scores_by_bin(p, same, pair_eta, n_bins: int = 20, which=(0, -1)) -> dict[int, dict[str, np.ndarray]]:
    """Figure 9 (b, c) data: match scores of same / different pairs in chosen eta bins.

    Pairs are put in ``n_bins`` equal-count bins of their uncertainty
    (`hedgekit.evaluation.metrics.equal_count_bins`) of ``pair_eta``; for every bin in ``which`` (negative =
    from the top, -1 = highest uncertainty) returns {"same": scores, "different": scores}.
    """
    p = np.asarray(p, dtype=float)
    same = np.asarray(same, dtype=bool)
    if not (len(p) == len(same) == len(pair_eta)):
        raise InputError(f"p, same and pair_eta must have equal lengths; got {len(p)}, {len(same)}, {len(pair_eta)}")
    b = M.equal_count_bins(pair_eta, n_bins)
    out = {}
    for w in which:
        idx = w % n_bins
        m = b == idx
        out[idx] = {"same": p[m & same], "different": p[m & ~same]}
    return out


# ---------------------------------------------------------------------------- tables
_SPLITS = {"ap_clean": ("AP", "clean"), "ap_corrupt": ("AP", "corrupt"),
           "knn_clean": ("KNN", "clean"), "knn_corrupt": ("KNN", "corrupt")}


def _row(ours: RepeatedEvaluation | None, key: str, ref: float | None) -> dict:
    o = ours.mean(key) if ours is not None else math.nan
    s = ours.std(key) if ours is not None else math.nan
    p = math.nan if ref is None else float(ref)
    return {"ours": o, "±": s, "paper": p, "Δ": o - p}


def _frame(rows: list[dict], index: list[str], models: list[str]) -> pd.DataFrame:
    """Wide table: one row per index tuple (first-seen order), columns ``<model> ours / ± / paper / Δ``."""
    keys = list(dict.fromkeys(tuple(r[i] for i in index) for r in rows))
    lookup = {(tuple(r[i] for i in index), r["model"]): r for r in rows}
    data: dict[str, list] = {}
    for m in models:
        for v in ("ours", "±", "paper", "Δ"):
            data[f"{m} {v}"] = [lookup[(k, m)][v] if (k, m) in lookup else math.nan for k in keys]
    return pd.DataFrame(data, index=pd.MultiIndex.from_tuples(keys, names=index))


def table1_frame(results: dict) -> pd.DataFrame:
    """Table 1 side by side: rows (N, D, task, split), columns ``<model> ours / ± / paper / Δ``.

    ``results`` maps (N, D, label) -> `RepeatedEvaluation`.
    """
    rows = []
    models = []
    for (n, d, label), res in results.items():
        if label not in models:
            models.append(label)
        ref = numbers.HIB_TABLE1.get((n, d), {}).get(label, {})
        for key, (task, split) in _SPLITS.items():
            rows.append({"N": n, "D": d, "task": task, "split": split, "model": label, **_row(res, key, ref.get(key))})
    return _frame(rows, ["N", "D", "task", "split"], models)


def table2_frame(results: dict) -> pd.DataFrame:
    """Table 2 side by side (Kendall tau, sign inverted), HIB models only."""
    rows, models = [], []
    for (n, d, label), res in results.items():
        if label == "point":
            continue
        if label not in models:
            models.append(label)
        ref = numbers.HIB_TABLE2.get((n, d), {}).get(label, {})
        for key, (task, split) in _SPLITS.items():
            rows.append({"N": n, "D": d, "task": task, "split": split, "model": label,
                         **_row(res, "tau_" + key, ref.get("tau_" + key))})
    return _frame(rows, ["N", "D", "task", "split"], models)


def table4_frame(results: dict, setting: tuple[int, int] = (3, 4)) -> pd.DataFrame:
    """Table 4 (App. C.1, 3-digit MNIST, D = 4) side by side, both of its parts in one frame.

    Rows (N, D, measure, task, split): measure "accuracy" is part (a), AP and KNN accuracy as in Table 1;
    measure "τ" is part (b), Kendall's τ between η bin and performance as in Table 2 (HIB models only: the
    paper gives none for point, whose η is one constant). Columns ``<model> ours / ± / paper / Δ`` for the
    paper's three models. ``results`` maps (N, D, label) -> `RepeatedEvaluation`; entries at other settings
    are ignored and a model without one shows the paper's numbers beside NaN (FAST mode trains none).
    """
    n, d = setting
    ref = numbers.HIB_TABLE4[setting]
    rows = []
    for measure, prefix in (("accuracy", ""), ("τ", "tau_")):
        for label, paper in ref.items():
            if prefix + "ap_clean" not in paper:
                continue
            for key, (task, split) in _SPLITS.items():
                rows.append({"N": n, "D": d, "measure": measure, "task": task, "split": split, "model": label,
                             **_row(results.get((n, d, label)), prefix + key, paper[prefix + key])})
    return _frame(rows, ["N", "D", "measure", "task", "split"], list(ref))


def table6_frame(results: dict) -> pd.DataFrame:
    """Appendix G Table 6 (plurality KNN, gallery/probe variants), point and MoG-1."""
    rows, models = [], []
    for (n, d, label), res in results.items():
        if label not in ("point", "MoG-1"):
            continue
        if label not in models:
            models.append(label)
        ref = numbers.HIB_TABLE6.get((n, d), {}).get(label, {})
        for g, p in KNN_VARIANTS:
            rows.append({"N": n, "D": d, "gallery": g, "probe": p, "model": label,
                         **_row(res, f"knnp_{g}_{p}", ref.get((g, p)))})
    return _frame(rows, ["N", "D", "gallery", "probe"], models)


def table7_frame(results: dict) -> pd.DataFrame:
    """Appendix G Table 7 (Kendall tau of eta bins vs plurality KNN), MoG-1."""
    rows = []
    for (n, d, label), res in results.items():
        if label != "MoG-1":
            continue
        ref = numbers.HIB_TABLE7.get((n, d), {})
        for g, p in KNN_VARIANTS:
            rows.append({"N": n, "D": d, "gallery": g, "probe": p, "model": label,
                         **_row(res, f"tau_knnp_{g}_{p}", ref.get((g, p)))})
    return _frame(rows, ["N", "D", "gallery", "probe"], ["MoG-1"])


def table5_frame(results: dict) -> pd.DataFrame:
    """Table 5 side by side: rows (N, D, metric), columns per beta. ``results``: (N, D, beta) -> evaluation."""
    rows, models = [], []
    for (n, d, beta), res in results.items():
        name = f"β={beta:g}"
        if name not in models:
            models.append(name)
        ref = numbers.HIB_TABLE5.get((n, d), {}).get(beta, {})
        for key, label in numbers.TABLE1_ROWS + numbers.TABLE2_ROWS:
            rows.append({"N": n, "D": d, "metric": label, "model": name, **_row(res, key, ref.get(key))})
    return _frame(rows, ["N", "D", "metric"], models)


def display_frame(df: pd.DataFrame, digits: int = 3) -> pd.DataFrame:
    """Rounded copy for printing in a notebook."""
    return df.round(digits)


# ---------------------------------------------------------------------------- Table 3 (data)
def dataset_counts(n_digits: int) -> dict:
    """Table 3's numbers measured on hedgekit's N-digit MNIST (builds/caches the splits)."""
    seen, unseen = class_split(n_digits)
    train = load_ndigit(n_digits, "train")
    ts, tu = load_ndigit(n_digits, "test_seen"), load_ndigit(n_digits, "test_unseen")
    return dict(total_classes=len(seen) + len(unseen), train_classes=len(np.unique(train.labels)),
                unseen_test_classes=len(np.unique(tu.labels)), seen_test_classes=len(np.unique(ts.labels)),
                train_images=len(train), test_images=len(ts))


def table3_frame(counts: dict) -> pd.DataFrame:
    """Table 3 side by side: rows = quantity, columns ``N=<n> ours / paper / Δ``; ``counts``: N -> dict."""
    data = {}
    for n, c in counts.items():
        ref = numbers.HIB_TABLE3.get(n, {})
        data[f"N={n} ours"] = {k: c[k] for k in ref}
        data[f"N={n} paper"] = ref
        data[f"N={n} Δ"] = {k: c[k] - ref[k] for k in ref}
    df = pd.DataFrame(data)
    df.index.name = "quantity"
    return df


def side_by_side(ours: dict, paper: dict, rows=numbers.TABLE1_ROWS, title: str = "") -> str:
    """A plain-text table: metric | ours | paper | difference (ours - paper)."""
    lines = [title] if title else []
    lines.append(f"{'metric':<18}{'ours':>8}{'paper':>8}{'diff':>8}")
    for key, label in rows:
        o, p = ours.get(key, math.nan), paper.get(key, math.nan)
        lines.append(f"{label:<18}{_fmt(o)}{_fmt(p)}{_fmt(o - p, signed=True)}")
    return "\n".join(lines)


def _fmt(x: float, signed: bool = False) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return f"{'—':>8}"
    return f"{x:>+8.3f}" if signed else f"{x:>8.3f}"
