"""Which models the SPE notebooks (06, 07) use: the Table 2 grid, the Figure 4 runs, the L-shape model.

Scott, Ridgeway & Mozer, "Stochastic Prototype Embeddings" (2019). Every model is a `hedgekit.zoo.Spec`
(PN and SPE, and the HIB and point models Table 2 evaluates beside them), loaded or trained by
`hedgekit.zoo.load_or_train`; how the models are evaluated is `hedgekit.papers.spe.protocol`.

PN and SPE train the `paper` preset's 3,000 episodes at N = 2 and four times as many (12,000) at N = 3 in
FULL mode (`TABLE2_STEP_FACTORS`, `table2_steps`): with 3-digit classes the preset leaves SPE 4-20 points
below the paper and the longer run closes most of the gap (docs/recipes.md, "N = 3, D = 2 is held back by
training"). PN trains as long, so the two stay compared at equal cost.

At N = 3, D = 3 the SPE's variances start at sigma_eps^2's initial value (`Spec.init_var="eps"`,
`TABLE2_EPS_INIT`), 7.43 there, instead of the kit's 1.0: started at 1.0 they collapse to ~1e-3 within
the first 100-250 steps and never recover (three runs, two seeds), leaving an SPE whose prototypes weight
clean and occluded support alike, like a PN's; started at sigma_eps^2 they dip and recover within 1,000
steps (two seeds). At D = 2 sigma_eps^2 starts at 1.78, near 1.0, and at N = 2, D = 3 the variances
recover from 1.0 (docs/recipes.md, "SPE's variances collapse at N = 3, D = 3").

FAST mode evaluates Table 2 on the shipped `paper` models of N = 2, D = 2 (`table2_specs`) and trains
`fast` Figure 4 runs.

`corrupt_support_geometry` measures, beside Table 2's rows, where corrupt support images put a PN's prototypes
(docs/recipes.md, "Why our PN falls short under corrupt support (N2D2)").
"""
from __future__ import annotations

from dataclasses import replace
from typing import Mapping, Sequence

from hedgekit.embedding import Embedding
from hedgekit.errors import InputError
from hedgekit.evaluation.embedded import EmbeddedSet, embed_set
from hedgekit.evaluation.episodes import evaluate_episodes
from hedgekit.methods.pn import PN
from hedgekit.zoo import PRESETS, Spec, ledger, prototype_head, shipped_or_fast

__all__ = ["TABLE2_STEP_FACTORS", "TABLE2_EPS_INIT", "table2_steps", "table2_settings", "table2_specs", "fig4_specs",
           "HEADLINE_SEEDS", "table2_seeds_by_setting", "table2_seed_specs", "table2_seed_rows", "lshapes_seed_specs",
           "recorded_lshapes_seeds", "model_measures", "notebook_specs", "notebook_record_specs", "FIG4_SAMPLES",
           "FAST_FIG4_SAMPLES", "FIG4_REPLICATIONS", "corrupt_support_geometry"]

FIG4_SAMPLES = (1, 3, 9, 27, 81)  # s of Figure 4
FAST_FIG4_SAMPLES = (1, 9)
FIG4_REPLICATIONS = 5  # Figure 4's caption: "a mean over 5 replications of running the model"
TABLE2_STEP_FACTORS = {(3, 2): 4, (3, 3): 4}  # (N, D) -> multiple of the preset's steps in FULL mode (module docstring)
TABLE2_EPS_INIT = ((3, 3),)  # (N, D) whose SPE starts its variances at sigma_eps^2 in FULL mode (module docstring)


def table2_settings(fast: bool) -> tuple[tuple[int, int], ...]:
    """(N, D) of Table 2: N in {2, 3} x D in {2, 3} in full mode, (2, 2) in FAST mode."""
    return ((2, 2),) if fast else ((2, 2), (2, 3), (3, 2), (3, 3))


def table2_steps(n: int, d: int, fast: bool) -> int | None:
    """Training steps of Table 2's PN and SPE at (N, D): None (the preset's) except in FULL mode at the
    settings of `TABLE2_STEP_FACTORS` (module docstring)."""
    factor = 1 if fast else TABLE2_STEP_FACTORS.get((n, d), 1)
    return None if factor == 1 else factor * PRESETS["paper"]["ndigit"]["steps"]


def _table2_models(n: int, d: int, preset: str, seed: int, steps: int | None,
                   init_var: str = "unit") -> dict[str, Spec]:
    return {"PN": Spec(kind="pn", n_digits=n, dim=d, preset=preset, seed=seed, steps=steps),
            "SPE": Spec(kind="spe", n_digits=n, dim=d, preset=preset, seed=seed, steps=steps, init_var=init_var),
            "HIB": Spec(kind="hib", n_digits=n, dim=d, components=1, preset=preset, seed=seed),
            "point": Spec(kind="point", n_digits=n, dim=d, preset=preset, seed=seed)}


def table2_specs(fast: bool, seed: int = 0) -> dict[tuple[int, int], dict[str, Spec]]:
    """(N, D) -> {"PN", "SPE", "HIB", "point"}: the models Table 2 and Figure 6b/c evaluate (SPE: intersection
    sampler, s = 1, sec. 4.2; HIB: MoG-1 of the HIB zoo's recipe).

    FAST mode (N = 2, D = 2 only) loads the four `paper` models when all of them ship with the package
    (`hedgekit.zoo.shipped_or_fast`), else trains four `fast` ones: a `fast` SPE trained for seconds does
    not yet discount occluded support images (docs/recipes.md), so it could not show what Table 2 is about."""
    if fast:
        paper, quick = _table2_models(2, 2, "paper", seed, None), _table2_models(2, 2, "fast", seed, None)
        return {(2, 2): dict(zip(paper, shipped_or_fast(list(paper.values()), list(quick.values()))))}
    return {(n, d): _table2_models(n, d, "paper", seed, table2_steps(n, d, fast),
                                   "eps" if (n, d) in TABLE2_EPS_INIT else "unit") for n, d in table2_settings(fast)}


HEADLINE_SEEDS = 3  # independently trained seeds of PN and SPE at each Table 2 setting


def table2_seeds_by_setting(fast: bool, seeds: int = HEADLINE_SEEDS) -> dict[tuple[int, int], dict[str, list[Spec]]]:
    """(N, D) -> "PN" / "SPE" -> Table 2's model at that setting (`table2_specs`) trained with seeds 0..``seeds`` -
    1: the seeds over which Table 2's claims are decided (the seed-to-seed spread is the noise), at N = 2, D = 2 on
    their own and at the other settings through their mean (`hedgekit.papers.spe.claims.seed_accuracies`). FULL mode
    only (FAST: {}); seed 0 is the table's own model. Listed for notebook 07 so that ``reproduce --train-missing``
    trains them ahead of its full run."""
    if fast:
        return {}
    rows = [table2_specs(False, s) for s in range(seeds)]
    return {nd: {label: [row[nd][label] for row in rows] for label in ("PN", "SPE")} for nd in rows[0]}


def table2_seed_specs(fast: bool, seeds: int = HEADLINE_SEEDS) -> dict[str, list[Spec]]:
    """"PN" / "SPE" -> the seeds of Table 2's N = 2, D = 2 model (`table2_seeds_by_setting`), over which its "SPE
    beats PN" claims there are decided; notebook 07 trains them where missing. FULL mode only (FAST: {})."""
    return table2_seeds_by_setting(fast, seeds).get((2, 2), {})


def table2_seed_rows(own: Mapping[tuple[int, int], Mapping[str, Spec]], table_rows: Sequence[Mapping], measures,
                     seeds: int = HEADLINE_SEEDS) -> tuple[list[list[dict]], list[str], str]:
    """Table 2's PN and SPE rows per trained seed of `table2_seeds_by_setting`, in seed order, as
    `hedgekit.papers.spe.claims.seed_accuracies` takes them.

    ``own``: the table's own models (`table2_specs`), whose rows are ``table_rows`` (`protocol.evaluate_table2`
    under the full protocol); every other seed's rows are its ``table2_cells`` (`protocol.table2_cell_rows`) from
    ``measures(spec, train)``, e.g. a notebook's `hedgekit.repro.session.Session.measures` of that group: its
    checkpoint here, else the ledger's record, else trained now where ``train``, else None. Seeds at N = 2, D = 2
    (minutes each on a CPU) train where missing; the other settings' (up to half an hour each) are only read where
    held. Returns (rows per seed, the names of the seeds' models not held, where the others' came from
    (`hedgekit.zoo.ledger.seed_sources`))."""
    from hedgekit.papers.spe import protocol  # scipy and scikit-learn: not in a notebook's first cell

    own_names = {spec.name: nd for nd, models in own.items() for spec in models.values()}
    by_seed, missing, found = [[] for _ in range(seeds)], [], []
    for (n, d), models in table2_seeds_by_setting(False, seeds).items():
        for label, specs in models.items():
            for s, spec in enumerate(specs):
                if spec.name in own_names:
                    by_seed[s] += [r for r in table_rows if (r["N"], r["D"]) == (n, d) and r["method"] == label]
                    continue
                cells = measures(spec, (n, d) == (2, 2))
                if cells is None:
                    missing.append(spec.name)
                    continue
                found.append(cells)
                by_seed[s] += protocol.table2_cell_rows(label, cells, n, d)
    return by_seed, missing, ledger.seed_sources(found)


def lshapes_seed_specs(seeds: int = HEADLINE_SEEDS) -> list[Spec]:
    """Notebook 06's 2D SPE on L-shapes trained with seeds 0..``seeds`` - 1 (FULL mode; seed 0 is the notebook's
    own model): the seeds over which sec. 4.1's held-out accuracy and its gap to Bayes are decided. Listed for
    notebook 06 so that ``reproduce --train-missing --only 06`` trains them."""
    return [Spec(kind="spe", data="lshapes", dim=2, preset="paper", seed=s) for s in range(seeds)]


def recorded_lshapes_seeds(meta) -> tuple[list[float], list[str], str]:
    """The held-out accuracy (%, sec. 4.1's 2 support per class) of each seed of `lshapes_seed_specs` as measured
    when it was trained (its checkpoint's quick check, else the ledger's record of it; ``meta``: spec -> that
    metadata or None, e.g. a notebook's `hedgekit.repro.session.Session.cached_meta`, which trains nothing):
    ``(accuracies in seed order, names of the seeds that have none, where they came from)``
    (`hedgekit.zoo.ledger.seed_sources`)."""
    found, missing = [], []
    for spec in lshapes_seed_specs():
        m = meta(spec)
        if m is None or "heldout_acc" not in m.get("metrics", {}):
            missing.append(spec.name)
        else:
            found.append(m)
    return [100 * m["metrics"]["heldout_acc"] for m in found], missing, ledger.seed_sources(found)


def fig4_specs(fast: bool, seed: int = 0) -> list[Spec]:
    """Figure 4 analogue: 2-digit MNIST, D = 2, naive and intersection sampler, s in {1, 3, 9, 27, 81}.

    FULL mode trains every (sampler, s) `FIG4_REPLICATIONS` times, with seeds ``seed`` to
    ``seed + FIG4_REPLICATIONS - 1``, as Figure 4 averages 5 replications; FAST mode trains one run
    of `FAST_FIG4_SAMPLES` each. Ordered by seed, then sampler, then s, so the first replication
    comes first."""
    p = "fast" if fast else "paper"
    seeds = range(seed, seed + (1 if fast else FIG4_REPLICATIONS))
    return [Spec(kind="spe", sampler=sampler, samples=s, recipe="fig4", preset=p, seed=r)
            for r in seeds for sampler in ("naive", "intersection")
            for s in (FAST_FIG4_SAMPLES if fast else FIG4_SAMPLES)]


def model_measures(spec: Spec) -> dict:
    """The measures notebook 07 takes from the trained model ``spec`` beyond its trainer's quick check (group ->
    function of the model and its checkpoint's metadata; `hedgekit.repro.measured` records and reads them):
    ``table2_cells`` (`hedgekit.papers.spe.protocol.table2_cells`) for the PN and SPE models of Table 2's seeded
    cells (`table2_seeds_by_setting`, at any setting and seed), over which its claims are decided."""
    seeded = {replace(s, seed=0).name for models in table2_seeds_by_setting(False).values()
              for group in models.values() for s in group}
    if replace(spec, seed=0).name not in seeded:
        return {}
    return {"table2_cells": _table2_cells}


def _table2_cells(model, meta) -> dict:
    """`hedgekit.papers.spe.protocol.table2_cells` of a trained PN / SPE model with the head its checkpoint records."""
    from hedgekit.papers.spe import protocol  # scipy and scikit-learn: not in a notebook's first cell

    return protocol.table2_cells(model, prototype_head(meta), model.config["n_digits"])


def notebook_specs(notebook: str, fast: bool, seed: int = 0) -> list:
    """Every model an SPE notebook loads: 06 its L-shape SPE (and in FULL mode its seeds, `lshapes_seed_specs`); 07
    the four models of each Table 2 setting (`table2_specs`), then the Figure 4 runs, then the seeds of
    `table2_seed_specs`. Other notebooks: []. Used by ``python -m hedgekit reproduce --list-models``."""
    preset = "fast" if fast else "paper"
    if notebook.startswith("06"):
        own = Spec(kind="spe", data="lshapes", dim=2, preset=preset, seed=seed)
        return [own] + ([] if fast else [s for s in lshapes_seed_specs() if s.name != own.name])
    if not notebook.startswith("07"):
        return []
    specs = [spec for four in table2_specs(fast, seed).values() for spec in four.values()] + fig4_specs(fast, seed)
    seeded = [spec for models in table2_seeds_by_setting(fast).values() for group in models.values()
              for spec in group]
    return specs + [s for s in seeded if s.name not in {t.name for t in specs}]


def notebook_record_specs(notebook: str, fast: bool) -> list:
    """The models of `notebook_specs` that the notebook decides on from their ledger records where the ledger holds
    them, loading no checkpoint (FULL mode): 06's L-shape seeds after its own model (`recorded_lshapes_seeds`), 07's
    Table 2 seeds beyond the table's own models (`table2_seed_rows`). ``reproduce --train-missing`` and
    ``--list-models`` count such a model as held when the ledger holds it
    (`hedgekit.repro.catalog.ledger_read_models`)."""
    if fast:
        return []
    if notebook.startswith("06"):
        return lshapes_seed_specs()[1:]
    if not notebook.startswith("07"):
        return []
    own = {spec.name for four in table2_specs(False).values() for spec in four.values()}
    return [spec for models in table2_seeds_by_setting(False).values() for group in models.values()
            for spec in group if spec.name not in own]


def corrupt_support_geometry(entries, sets, n_episodes: int = 1000, k_support: int = 50, query_per_class: int = 5,
                             seed: int = 0):
    """Where corrupt support images put a PN's prototypes, and how much of the accuracy that costs is a
    global distortion of the embedding (docs/recipes.md, "Why our PN falls short under corrupt support (N2D2)").

    Table 2's corrupt-support condition (App. E: every digit of every support image occluded, sides
    U(0, 28); clean queries) with App. A.3's episodes (all classes of the split, ``k_support`` = 50 support
    per class) and the PN rule (Snell et al. eq. 1-2: prototype = mean of the support embeddings; for a
    Gaussian embedding its mean), for every model in ``entries``. Per model and split it measures, from
    the class means of all the split's images (clean: c_y; their corrupt twins: c'_y):

    * ``contraction``: mean distance of the c'_y from their centroid over that of the c_y (1: the corrupt
      prototypes spread as wide as the clean ones; < 1: they are drawn towards the centre);
    * ``shift_over_spacing``: median over classes of |c'_y - c_y| over the distance from c_y to the nearest
      other clean prototype;
    * ``own_nearest``: fraction of classes whose c'_y is still nearer its own c_y than any other class's;
    * ``clean``, ``corrupt``: accuracy (%) of clean / corrupt support with clean queries, ``*_se`` the
      standard error over the ``n_episodes`` episodes (the same episodes for every column);
    * ``corrected``: corrupt support after one affine map of the embedding plane, fitted by least squares
      from the c'_y to the c_y of the *other* split(s) (``fit_split``) and applied to every corrupt
      embedding of this split. What it recovers is the part of the loss due to a shift shared by all
      classes (a contraction, a translation), not to classes scrambled one by one; it is a diagnostic,
      not a classifier the paper uses (it needs clean and corrupt twins of other classes).

    ``entries``: label -> model (or (model, head): the head is ignored, every model is read with the PN
    rule). ``sets``: split -> a test set with ``images``, ``corrupt`` and ``labels`` (e.g.
    `hedgekit.papers.spe.protocol.ndigit_test_sets`), embedded once per model, or an already embedded
    `hedgekit.evaluation.embedded.EmbeddedSet` (used as it is, whatever the model). At least two splits,
    each with more classes than the embedding has dimensions. Returns a pandas DataFrame, one row per
    (method, split).
    """
    import numpy as np
    import pandas as pd
    import torch

    if len(sets) < 2:
        raise InputError(f"corrupt_support_geometry fits its correction on another split: it needs two or more "
                         f"splits, got {list(sets)}")
    rows = []
    for label, entry in entries.items():
        model = entry[0] if isinstance(entry, tuple) else entry
        points, means = {}, {}
        for split, ds in sets.items():
            es = ds if isinstance(ds, EmbeddedSet) else embed_set(model, ds, eta=False)
            if es.corrupt is None:
                raise InputError(f"split {split!r} has no corrupt twin to take the support from")
            clean = es.clean.mixture_mean().detach().cpu().double().numpy()
            corrupt = es.corrupt.mixture_mean().detach().cpu().double().numpy()
            labels = np.asarray(es.labels)
            ids, inv = np.unique(labels, return_inverse=True)
            if len(ids) <= clean.shape[1]:
                raise InputError(f"split {split!r} has {len(ids)} classes; the affine fit needs more than D = "
                                 f"{clean.shape[1]}")
            points[split] = (clean, corrupt, labels)
            means[split] = (np.stack([clean[inv == i].mean(0) for i in range(len(ids))]),
                            np.stack([corrupt[inv == i].mean(0) for i in range(len(ids))]))
        for split, (clean, corrupt, labels) in points.items():
            c, x = means[split]
            others = [s for s in sets if s != split]
            fit_c = np.concatenate([means[s][0] for s in others])
            fit_x = np.concatenate([means[s][1] for s in others])
            w, *_ = np.linalg.lstsq(np.c_[fit_x, np.ones(len(fit_x))], fit_c, rcond=None)  # c ~ [c', 1] w
            mapped = np.c_[corrupt, np.ones(len(corrupt))] @ w
            dist = np.linalg.norm(c[:, None] - c[None], axis=-1)
            np.fill_diagonal(dist, np.inf)
            spacing, shift = dist.min(1), np.linalg.norm(x - c, axis=1)
            to_clean = np.linalg.norm(x[:, None] - c[None], axis=-1)
            as_points = lambda z: Embedding.point(torch.as_tensor(z, dtype=torch.float32))  # noqa: E731
            row = dict(method=label, split=split, classes=len(c), k_support=k_support, episodes=n_episodes,
                       contraction=float(np.linalg.norm(x - x.mean(0), axis=1).mean()
                                         / np.linalg.norm(c - c.mean(0), axis=1).mean()),
                       shift_over_spacing=float(np.median(shift / spacing)),
                       own_nearest=float((to_clean.argmin(1) == np.arange(len(c))).mean()), fit_split="+".join(others))
            for name, sup, support_corrupt in (("clean", corrupt, False), ("corrupt", corrupt, True),
                                               ("corrected", mapped, True)):
                es = EmbeddedSet(as_points(clean), as_points(sup), labels)
                mean, std, accs = evaluate_episodes(None, PN(), es, n_episodes=n_episodes, k_support=k_support,
                                                    query_per_class=query_per_class, support_corrupt=support_corrupt,
                                                    seed=seed)
                row[name], row[f"{name}_se"] = 100 * mean, 100 * std / np.sqrt(len(accs))
            rows.append(row)
    cols = ["method", "split", "classes", "k_support", "episodes", "clean", "clean_se", "corrupt", "corrupt_se",
            "corrected", "corrected_se", "contraction", "shift_over_spacing", "own_nearest", "fit_split"]
    return pd.DataFrame(rows, columns=cols)
