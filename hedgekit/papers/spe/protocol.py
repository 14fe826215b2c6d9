"""How the SPE notebooks measure: Table 2 episode grids, Figure 7's digit axes, and the L-shape
measurements behind Figures 2-3 (Scott, Ridgeway & Mozer 2019).

Plain numpy in and out, so that each is tested against an oracle (``tests/papers/spe/test_protocol.py``):
the 5 x 5 grid embedding of Figure 2c and its axis assignment, the per-axis variance sweeps of Figure 3,
the Table 2 episode grid, Figure 4's points averaged over replications, the digit-axis analysis of
Figure 7, and a sigma_eps^2 fit that lets HIB's Gaussian embeddings be evaluated with SPE's rule.
"""
from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np
import torch

from hedgekit.data import load_ndigit
from hedgekit.data.ndigit import per_class_subset
from hedgekit.data.lshapes import (LEG_LENGTH_RANGE, centroid_sweep, interpolation_grid, render_batch)
from hedgekit.embedding import Embedding
from hedgekit.data.samplers import EpisodeSampler
from hedgekit.evaluation.episodes import evaluate_episodes
from hedgekit.evaluation.embedded import EmbeddedSet, embed_set, images_to_tensor
from hedgekit.errors import InputError
from hedgekit.methods.pn import PN, pn_prototypes
from hedgekit.methods.fast.spe import SPE
from hedgekit.papers.hib.analysis import digit_at


# (support, query) corruption conditions of Table 2 / Figure 6 (App. E), in the paper's order.
CONDITIONS = (("clean", "clean"), ("corrupt", "clean"), ("clean", "corrupt"))


# ============================================================================ N-digit evaluation
def episode_grid(model, head, sets: Mapping[str, EmbeddedSet], n_episodes: int, k_support: int = 50,
                 query_per_class: int = 5, seed: int = 0, conditions=CONDITIONS) -> list[dict]:
    """Table 2 for one model: accuracy (%) per (split, support, query) condition (SPE App. A.3, E).

    ``sets``: split name ("seen", "unseen") -> `EmbeddedSet` (embed once with `embed_dataset`). Every
    episode holds all classes of the split (70 seen / 30 unseen for N = 2; 100 / 100 for N = 3) with
    ``k_support`` support and ``query_per_class`` queries per class. Returns rows with keys split,
    support, query, acc, se (standard error over episodes, %), episodes.
    """
    rows = []
    for split, es in sets.items():
        for sup, qry in conditions:
            mean, std, accs = evaluate_episodes(model, head, es, n_episodes=n_episodes, k_support=k_support,
                                                query_per_class=query_per_class, support_corrupt=sup == "corrupt",
                                                query_corrupt=qry == "corrupt", seed=seed)
            rows.append(dict(split=split, support=sup, query=qry, acc=100 * mean,
                             se=100 * std / math.sqrt(len(accs)), episodes=len(accs)))
    return rows


def fit_sigma_eps(embedded: Embedding, labels, n_classes: int = 32, k_support: int = 5, query_per_class: int = 5,
                  steps: int = 150, lr: float = 0.05, seed: int = 0) -> SPE:
    """An SPE head for *fixed* Gaussian embeddings (e.g. HIB's): only gamma is fitted.

    Lets a model trained with another loss be evaluated with SPE's rule (eq. 5-7): sigma_eps^2 =
    softplus(gamma) is the one free quantity of the SPE head (App. B); it is chosen by minimising the
    SPE training loss on episodes of the given embeddings (training images, not test images).
    """
    labels = np.asarray(labels)
    if len(embedded) != len(labels):
        raise InputError(f"{len(embedded)} embeddings but {len(labels)} labels")
    if embedded.n_components != 1:
        raise InputError("fit_sigma_eps needs single-Gaussian embeddings (C = 1)")
    n_classes = min(n_classes, len(np.unique(labels)))
    head = SPE.for_episodes(n_classes, k_support, embedded.dim)
    opt = torch.optim.Adam(head.parameters(), lr=lr)
    episodes = EpisodeSampler(labels, n_classes, k_support, query_per_class, seed)
    gen = torch.Generator().manual_seed(seed)
    emb = embedded.detach()
    for _ in range(steps):
        ep = episodes.sample()
        loss = head.loss(emb[torch.as_tensor(ep.query)], torch.as_tensor(ep.query_labels),
                         emb[torch.as_tensor(ep.support)], torch.as_tensor(ep.support_labels), ep.n_classes,
                         sampler="naive", n_samples=16, generator=gen)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return head.requires_grad_(False).eval()


def class_prototypes(head, embedded: Embedding, labels) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(class_ids (K,), mu (K, D), var (K, D)): every class's prototype from *all* its images.

    Figure 7: "the location of the class corresponds to the mean of the prototype in the test set
    using 140 support instances" (all ~143 test images of a 2-digit class). SPE: eq. 5 (sigma_y^2 is
    the prototype's own variance); PN: the plain mean (variance 0).
    """
    labels = np.asarray(labels)
    ids, inv = np.unique(labels, return_inverse=True)
    y = torch.as_tensor(inv)
    with torch.no_grad():
        if isinstance(head, SPE):
            mu, var = head.prototypes(embedded, y, len(ids))
        else:
            mu = pn_prototypes(embedded.mixture_mean(), y, len(ids))
            var = torch.zeros_like(mu)
    return ids, mu.numpy(), var.numpy()


def digit_axes(prototypes, class_ids, n_digits: int = 2) -> np.ndarray:
    """(D, n_digits) share of each embedding coordinate's variance explained by each digit position.

    eta^2 of a one-way ANOVA: for coordinate j and position p, the variance of the per-digit-value
    means of coordinate j (weighted by group size) over its total variance. Figure 7's "horizontal
    dimension represents the first digit ... vertical the second" is eta^2 ~ [[1, 0], [0, 1]].
    """
    mu = np.asarray(prototypes, dtype=float)
    if mu.ndim != 2 or len(mu) != len(np.asarray(class_ids)):
        raise InputError(f"prototypes must be (K, D) with one row per class id; got {mu.shape}")
    out = np.zeros((mu.shape[1], n_digits))
    total = mu.var(0)
    for p in range(n_digits):
        d = digit_at(class_ids, p, n_digits)
        between = np.zeros(mu.shape[1])
        for v in np.unique(d):
            g = mu[d == v]
            between += len(g) * (g.mean(0) - mu.mean(0)) ** 2
        out[:, p] = np.where(total > 0, between / len(mu) / np.where(total > 0, total, 1), 0.0)
    return out


def unseen_placement(seen_mu, seen_ids, unseen_mu, unseen_ids, n_digits: int = 2) -> dict:
    """Are unseen classes "embedded in exactly the positions where they belong" (Figure 7)?

    Each digit position p is read off the coordinate that explains it best (`digit_axes` on the seen
    prototypes). Along that coordinate every digit value v has a position: the mean coordinate of the
    seen classes with v at p. An unseen class's digit at p is read as the value whose position is
    nearest to its prototype's coordinate; it is placed correctly if every digit is read correctly.
    Returns {"accuracy": fraction of unseen classes placed correctly, "per_position": (n_digits,)
    fraction of digits read correctly, "axes": (n_digits,) coordinate used per position, "chance": 10^-N}.
    """
    seen_mu, unseen_mu = np.asarray(seen_mu, float), np.asarray(unseen_mu, float)
    eta2 = digit_axes(seen_mu, seen_ids, n_digits)
    axes = eta2.argmax(0)
    ok = np.ones(len(unseen_mu), dtype=bool)
    per = []
    for p in range(n_digits):
        j = axes[p]
        d_seen, d_unseen = digit_at(seen_ids, p, n_digits), digit_at(unseen_ids, p, n_digits)
        values = np.unique(d_seen)
        pos = np.array([seen_mu[d_seen == v, j].mean() for v in values])
        read = values[np.abs(unseen_mu[:, j, None] - pos[None]).argmin(1)]
        hit = read == d_unseen
        per.append(float(hit.mean()) if len(hit) else math.nan)
        ok &= hit
    return {"accuracy": float(ok.mean()) if len(ok) else math.nan, "per_position": np.array(per), "axes": axes,
            "chance": 10.0 ** -n_digits}


def ndigit_test_sets(n_digits: int, per_class: int | None = None, seed: int = 0) -> dict:
    """{"seen": test_seen, "unseen": test_unseen} of N-digit MNIST, optionally ``per_class`` images per class.

    Full sets hold ~143 (N = 2) or 100 (N = 3) images per class; episodes need 50 support + 5 query.
    """
    out = {}
    for split in ("seen", "unseen"):
        ds = load_ndigit(n_digits, f"test_{split}")
        out[split] = ds if per_class is None else per_class_subset(ds, per_class, seed)
    return out


def hib_spe_head(model, n_digits: int, n_images: int = 5000, seed: int = 0, **fit_kw) -> SPE:
    """An SPE head for a HIB (MoG-1) model: sigma_eps^2 fitted (`fit_sigma_eps`) on training images.

    Uses the training split's occluded twin (each digit occluded with probability 0.2, App. E), i.e.
    the distribution the HIB model was trained on; the test sets are never touched.
    """
    train = load_ndigit(n_digits, "train")
    idx = np.sort(np.random.default_rng(seed).permutation(len(train))[:n_images])
    emb = model.embed(images_to_tensor(train.corrupt[idx]))
    return fit_sigma_eps(emb, train.labels[idx], seed=seed, **fit_kw)


def evaluate_table2(entries: Mapping[str, tuple], sets: Mapping[str, object], n_episodes: int, n: int, d: int,
                    seed: int = 0, k_support: int = 50, query_per_class: int = 5) -> list[dict]:
    """Table 2 rows for several models at one (N, D): ``entries`` label -> (model, head or None for PN).

    Each model embeds each test set once (clean and corrupt twin); every (split, condition) is the mean
    over ``n_episodes`` episodes with the same seed, so all methods see the same episodes.
    Rows: method, N, D, split, condition ("clean S / clean Q", ...), acc (%), se (%), episodes.
    """
    names = {("clean", "clean"): "clean S / clean Q", ("corrupt", "clean"): "corrupt S / clean Q",
             ("clean", "corrupt"): "clean S / corrupt Q"}
    rows, embedded = [], {}
    for label, (model, head) in entries.items():
        key = id(model)
        if key not in embedded:
            embedded[key] = {split: embed_set(model, ds, eta=False) for split, ds in sets.items()}
        for r in episode_grid(model, head if head is not None else PN(), embedded[key], n_episodes, k_support,
                              query_per_class, seed):
            rows.append(dict(method=label, N=n, D=d, split=r["split"], condition=names[(r["support"], r["query"])],
                             acc=r["acc"], se=r["se"], episodes=r["episodes"]))
    return rows


TABLE2_EPISODES = 1000  # episodes per Table 2 cell (App. A.3)


def table2_cells(model, head, n_digits: int = 2) -> dict:
    """Table 2's cells of one PN or SPE model under the full protocol: every image of both N-digit test splits
    (`ndigit_test_sets`), `TABLE2_EPISODES` episodes per cell with episode seed 0 (`evaluate_table2`; ``head`` None:
    the PN rule). Returns ``"{split}: {condition}"`` -> accuracy (%), ``"{split}: {condition} (se)"`` -> its
    standard error over episodes (%), and ``episodes``: the ledger's ``table2_cells`` group, from which notebook 07
    decides Table 2 over seeds whose checkpoints are not on the machine (`table2_cell_rows` reads it back)."""
    rows = evaluate_table2({"model": (model, head)}, ndigit_test_sets(n_digits), TABLE2_EPISODES, n_digits,
                           model.config["dim"], seed=0)
    out = {}
    for r in rows:
        out[f"{r['split']}: {r['condition']}"] = r["acc"]
        out[f"{r['split']}: {r['condition']} (se)"] = r["se"]
    return {**out, "episodes": rows[0]["episodes"]}


def table2_cell_rows(method: str, cells: Mapping, n: int = 2, d: int = 2) -> list[dict]:
    """`evaluate_table2`'s rows of ``method`` at (``n``, ``d``) from its `table2_cells` (a measurement or the ledger's
    record, whose other keys, such as `hedgekit.repro.session.Session.measures`' ``source``, are left out): method,
    N, D, split, condition, acc, se, episodes."""
    return [dict(method=method, N=n, D=d, split=key.split(": ")[0], condition=key.split(": ", 1)[1], acc=acc,
                 se=cells[f"{key} (se)"], episodes=int(cells["episodes"]))
            for key, acc in cells.items() if ": " in key and not key.endswith(" (se)")]


def fig4_accuracy(model, head, test, n_episodes: int = 1000, n_classes: int = 20, k_support: int = 1,
                  seed: int = 0) -> tuple[float, float]:
    """Figure 4's test: accuracy (%) and standard error of k-shot n-class episodes (naive, 200 samples)."""
    mean, std, accs = evaluate_episodes(model, head, test, n_episodes=n_episodes, n_classes=n_classes,
                                        k_support=k_support, query_per_class=5, seed=seed)
    return 100 * mean, 100 * std / math.sqrt(len(accs))


def fig4_curves(runs: Sequence[Mapping]) -> dict[str, dict]:
    """Figure 4's points from its runs: the mean over replications, +-1 standard error of that mean.

    ``runs``: one dict per trained model with keys sampler, s, acc (%) and se (its episode standard error,
    %), e.g. from `fig4_accuracy`. Returns sampler -> dict(s, acc, se, runs), s ascending, where acc is the
    mean of a point's runs and se the standard error of the mean over them, std(ddof=1) / sqrt(R), as
    Figure 4's caption ("a mean over 5 replications ... +-1 standard error of the mean"). A point with one
    run (FAST mode) keeps that run's episode standard error, the only spread it has. ``runs`` lists each
    point's accuracies.
    """
    points: dict[tuple[str, int], list[tuple[float, float]]] = {}
    for r in runs:
        acc, se = float(r["acc"]), float(r["se"])
        if not (math.isfinite(acc) and math.isfinite(se)):
            raise InputError(f"a Figure 4 run needs a finite acc and se; got {r}")
        points.setdefault((str(r["sampler"]), int(r["s"])), []).append((acc, se))
    if not points:
        raise InputError("fig4_curves needs at least one run")
    curves: dict[str, dict] = {}
    for (sampler, s), vals in sorted(points.items()):
        accs = np.array([a for a, _ in vals])
        se = float(accs.std(ddof=1) / math.sqrt(len(accs))) if len(accs) > 1 else vals[0][1]
        c = curves.setdefault(sampler, dict(s=[], acc=[], se=[], runs=[]))
        c["s"].append(s)
        c["acc"].append(float(accs.mean()))
        c["se"].append(se)
        c["runs"].append(accs.tolist())
    return curves


# ============================================================================ L-shapes measurements
def _embed_images(model, images, batch_size: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """(mean (M, D), var (M, D)) of images (M, 3, H, W) in [0, 1] or uint8."""
    emb = model.embed(images_to_tensor(images), batch_size)
    return emb.mixture_mean().numpy().astype(float), emb.total_var().numpy().astype(float)


def heldout_accuracy(model, head, test, k_supports: Sequence[int] = (2,), n_episodes: int = 200,
                     query_per_class: int = 25, seed: int = 0) -> dict[int, tuple[float, float]]:
    """Sec. 4.1 "classification accuracy of held-out samples": 4-way episodes on a test set.

    Returns {k_support: (mean accuracy, standard error over episodes)}. The paper formed prototypes
    from 2 instances per class (its training episodes); larger k shows the accuracy with exact prototypes.
    """
    es = test if isinstance(test, EmbeddedSet) else embed_set(model, test, eta=False)
    out = {}
    for k in k_supports:
        mean, std, accs = evaluate_episodes(model, head, es, n_episodes=n_episodes, n_classes=4, k_support=k,
                                            query_per_class=query_per_class, seed=seed)
        out[int(k)] = (mean, std / math.sqrt(len(accs)))
    return out


def accuracy_by_level(head, embedded: EmbeddedSet, values, edges, n_samples: int = 200, seed: int = 0) -> list[dict]:
    """Accuracy of every image of a set, grouped by the level of one factor (hue noise, leg length).

    Prototypes come from the whole set (all its clean images, so they are nearly exact) and every image
    is classified by the head's evaluation rule (SPE: eq. 7, naive sampler). ``values`` (M,) are the
    images' factor levels and ``edges`` the bin edges: bin i holds edges[i] <= value < edges[i + 1]
    (the last bin includes its right edge). Returns [dict(lo, hi, n, acc)] per bin. This says whether a
    factor makes the classes harder to tell apart *for this model*, i.e. whether there is anything to hedge.
    """
    values, edges = np.asarray(values, dtype=float), np.asarray(edges, dtype=float)
    labels = np.asarray(embedded.labels)
    ids, y = np.unique(labels, return_inverse=True)
    y = torch.as_tensor(y)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        if isinstance(head, SPE):
            log_p = head.log_posterior(embedded.clean, embedded.clean, y, len(ids), "naive", n_samples, gen)
        else:
            log_p = PN().log_posterior(embedded.clean, embedded.clean, y, len(ids))
    correct = (log_p.argmax(1) == y).numpy()
    out = []
    for i in range(len(edges) - 1):
        last = i == len(edges) - 2
        mask = (values >= edges[i]) & ((values <= edges[i + 1]) if last else (values < edges[i + 1]))
        out.append(dict(lo=float(edges[i]), hi=float(edges[i + 1]), n=int(mask.sum()),
                        acc=float(correct[mask].mean()) if mask.any() else math.nan))
    return out


def grid_embedding(model, n: int = 5, leg_length: float = LEG_LENGTH_RANGE[1]) -> dict:
    """Figures 2b-c: the n x n interpolation grid (class centres in the corners) and its embedding.

    Returns dict(orientation, hue (n, n) degrees, images (n, n, 3, 64, 64) float, mean, var (n, n, D)).
    Full legs by default (the largest training leg length, 98%).
    """
    o, h = interpolation_grid(n)
    images = render_batch(o, h, 0.0, leg_length)
    size = model.config.get("height", images.shape[-1])
    if size != images.shape[-1]:
        images = render_batch(o, h, 0.0, leg_length, size=size)
    mean, var = _embed_images(model, images.reshape(-1, *images.shape[2:]))
    return dict(orientation=o, hue=h, images=images, mean=mean.reshape(n, n, -1), var=var.reshape(n, n, -1))


def factor_axes(means, orientation, hue) -> dict:
    """Which embedding axis carries which generative factor (Figure 2c: "disentangling the two factors").

    Pearson correlations C[j, f] between embedding coordinate j and factor f (0 = orientation, 1 = hue)
    over the given points (e.g. the 5 x 5 grid, where the factors are linear and uncorrelated). The axis
    of factor f is argmax_j |C[j, f]| (the two must differ). ``disentanglement`` = mean over factors of
    |C| on the assigned axis minus |C| on the other axis: 1 for a perfectly axis-aligned embedding, 0
    for one rotated by 45 degrees. Returns dict(corr (D, 2), axis {"orientation": j, "hue": j'},
    disentanglement, sign (+1/-1 per factor: does the axis increase with the factor?)).
    """
    m = np.asarray(means, dtype=float).reshape(-1, np.shape(means)[-1])
    f = np.stack([np.asarray(orientation, float).ravel(), np.asarray(hue, float).ravel()], 1)
    if len(m) != len(f) or m.shape[1] < 2:
        raise InputError(f"need (M, D >= 2) means and M factor values; got {m.shape} and {len(f)}")
    mc, fc = m - m.mean(0), f - f.mean(0)
    denom = np.sqrt((mc**2).sum(0))[:, None] * np.sqrt((fc**2).sum(0))[None]
    corr = np.where(denom > 0, mc.T @ fc / np.where(denom > 0, denom, 1), 0.0)  # (D, 2)
    a = np.abs(corr)
    # the best assignment of two different axes to the two factors
    best, pair = -1.0, (0, 1)
    for j0 in range(m.shape[1]):
        for j1 in range(m.shape[1]):
            if j0 != j1 and a[j0, 0] + a[j1, 1] > best:
                best, pair = a[j0, 0] + a[j1, 1], (j0, j1)
    j_o, j_h = pair
    score = 0.5 * ((a[j_o, 0] - a[j_h, 0]) + (a[j_h, 1] - a[j_o, 1]))
    return dict(corr=corr, axis={"orientation": int(j_o), "hue": int(j_h)}, disentanglement=float(score),
                sign={"orientation": int(np.sign(corr[j_o, 0]) or 1), "hue": int(np.sign(corr[j_h, 1]) or 1)})


def ambiguity_peaks(var_grid, axes: Mapping[str, int]) -> dict:
    """Figure 2c: "instances halfway between two classes on one dimension have maximal variance along
    that dimension".

    ``var_grid`` (n, n, D): variances on the interpolation grid (orientation along columns, hue along
    rows). For the orientation axis, the variance averaged over rows is a profile over the n columns;
    likewise the hue axis over rows. Returns dict(profile_orientation (n,), profile_hue (n,),
    peak_orientation, peak_hue (index of the maximum), middle (= (n - 1) / 2), peak_ratio_* (max of the
    profile over the mean of its two ends: > 1 when the middle is more uncertain than the class centres)).
    """
    v = np.asarray(var_grid, dtype=float)
    if v.ndim != 3 or v.shape[0] != v.shape[1]:
        raise InputError(f"var_grid must be (n, n, D); got {v.shape}")
    p_o = v[:, :, axes["orientation"]].mean(0)
    p_h = v[:, :, axes["hue"]].mean(1)
    ends = lambda p: 0.5 * (p[0] + p[-1])  # noqa: E731
    return dict(profile_orientation=p_o, profile_hue=p_h, peak_orientation=int(p_o.argmax()),
                peak_hue=int(p_h.argmax()), middle=(v.shape[0] - 1) / 2,
                peak_ratio_orientation=float(p_o.max() / ends(p_o)), peak_ratio_hue=float(p_h.max() / ends(p_h)))


def variance_sweep(model, levels, factor: str = "hue_noise", repeats: int = 8, leg_length: float = 1.0,
                   seed: int = 0) -> dict:
    """Figure 3: the embedding variance of the four class centroids as one input factor changes.

    ``factor="hue_noise"`` (left panel): per-pixel hue-noise std in degrees, full legs;
    ``factor="leg_length"`` (right panel): leg length as a fraction of the full length, no noise.
    Every (level, class) is rendered ``repeats`` times (different hue-noise draws;
    `hedgekit.data.lshapes.centroid_sweep`). Returns dict(level (L,), var (L, D): the mean variance per
    embedding axis over classes and repeats, var_all and mean_all (L, 4, repeats, D), shift (L,): mean
    distance of an embedding mean from its class centroid's mean at the first level, example (L, 3, H, W):
    class 0's first image per level).
    """
    lv = np.asarray(levels, dtype=float).ravel()
    f = centroid_sweep(lv, factor, repeats, leg_length=leg_length, seed=seed)
    size = model.config.get("height", 64)
    images = render_batch(f["orientation"], f["hue"], f["hue_noise"], f["leg_length"], f["noise_seed"], size=size)
    mean, var = _embed_images(model, images.reshape(-1, *images.shape[-3:]))
    var_all = var.reshape(len(lv), 4, repeats, -1)
    mean_all = mean.reshape(len(lv), 4, repeats, -1)
    ref = mean_all[0].mean(1)  # (4, D): each class centroid's mean embedding at the first level
    shift = np.linalg.norm(mean_all - ref[None, :, None], axis=-1).mean((1, 2))
    return dict(level=lv, var=var_all.mean((1, 2)), var_all=var_all, mean_all=mean_all, shift=shift,
                example=images[:, 0, 0], factor=factor)


def class_spacing(grid_mean) -> float:
    """Mean distance between the embeddings of class centres that differ in one factor (the four edges of
    the Figure 2b grid's corner square): the scale against which shifts of an embedding are judged."""
    g = np.asarray(grid_mean, dtype=float)
    c = [g[0, 0], g[0, -1], g[-1, -1], g[-1, 0]]
    return float(np.mean([np.linalg.norm(c[i] - c[(i + 1) % 4]) for i in range(4)]))


def sweep_growth(var, first: int = 0, last: int = -1) -> np.ndarray:
    """(D,) ratio of the per-axis variance at the ``last`` level over the ``first`` (Figure 3's trend)."""
    v = np.asarray(var, dtype=float)
    return v[last] / v[first]


def embed_factors(model, orientation, hue, hue_noise=0.0, leg_length: float | np.ndarray = 1.0, seed: int = 0):
    """Render L-shapes from factor arrays (broadcast) and embed them: (images, mean (M, D), var (M, D)).

    Hue noise of image i is seeded with ``[seed, i]`` (`render_batch`), so results are reproducible.
    """
    size = model.config.get("height", 64)
    images = render_batch(orientation, hue, hue_noise, leg_length, seed, size=size)
    flat = images.reshape(-1, *images.shape[-3:])
    mean, var = _embed_images(model, flat)
    return flat, mean, var
