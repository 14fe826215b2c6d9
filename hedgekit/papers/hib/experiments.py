"""Which zoo models each HIB reproduction notebook uses, in FAST and in FULL mode.

One place decides the experiment grid, so the notebooks stay thin and
``python -m hedgekit reproduce --list-models`` can print exactly the checkpoints a
full run needs (to train or ship them ahead of time).

FULL mode follows the paper (Oh et al. 2019):

* Figures 3, 4, 1b, 7: 2-digit MNIST, D = 2, point / MoG-1 / MoG-2 / MoG-4;
  Figure 8: 3-digit MNIST, D = 3, MoG-1 (FAST: 2-digit).
* Figure 10, 11 and Appendix D: D = 2 point and MoG-1; D = 1 point and MoG-1 over
  four seeds ("four trials").
* Tables 1, 2, 6, 7 and Figures 5, 9: N in {2, 3} x D in {2, 3} x {point, MoG-1, MoG-2}.
* Table 4 (App. C.1): N = 3, D = 4 x {point, MoG-1, MoG-2}.
* Table 5: MoG-1, beta in {0, 1e-4} at (N, D) = (2, 2) and (3, 3);
  Figure 12: MoG-1, N = 3, D = 3, beta in {1e-6, ..., 1e-2};
  Figure 6: point models with the hard contrastive loss over a range of margins M,
  beside the soft contrastive point model.

Two sweeps are shortened in FULL mode: Figure 12 (5 betas) and Figure 6 (5 margins + the
soft reference) need 11 models, ~3 CPU-hours at the full `paper` preset on this kit's 2-core
machine; they train for a quarter of the preset's steps (`SWEEP_DIVISOR`: point 3,000, HIB
2,250 steps), every model of one sweep alike, so each sweep compares like with like. The
number line (Appendix D: 4 seeds x point / MoG-1, D = 1) trains at full length, because its
claim is about the organisation a fully trained model reaches. Tables 1, 2, 5, 6, 7, Table 4,
Appendix D and Figures 1b, 3, 4, 5, 7, 8, 9, 10, 11 use full `paper` models. The notebooks
print the steps of every checkpoint they use.

HIB models draw the `paper` preset's K = 4 samples per input, except the MoG models at D >= 3 of
Tables 1, 2, 6, 7, 4 and Figure 8 (`hib_k`): they draw the paper's own K = 8, because with K = 4
MoG-1's variances collapse to one input-independent value at D = 3 (corrupt / clean variance
ratio ~1x against 12-43x at K = 8; at N = 3, D = 4 it collapses at K = 8 too: docs/recipes.md,
"MoG-1 at D = 3 collapses its variances at K = 4"). The D = 1 HIB models of the number line
(Appendix D) draw the paper's K = 8 too: App. D's counts are compared with the paper's own models,
and K does not change them beyond the seed-to-seed spread (docs/recipes.md, "HIB App. D at full
length"). Notebook 05's N = 3, D = 3 models (Table 5, Figure 12) and notebook 07's HIB rows keep K = 4.

Two cells of Tables 1, 2, 6, 7 train `LONG_STEPS` = 18,000 steps (twice the preset's HIB steps) at K = 8
(`table1_training`):

* MoG-2 at N = 2: at 9,000 steps its clean KNN stays ~0.1 below the paper's, whatever K, and twice the
  steps close the gap (docs/recipes.md, "MoG-2 at N = 2, D = 2 is behind MoG-1"). At N = 3 the preset's
  MoG-2 is already at or above the paper's KNN.
* All three models at N = 3, D = 3 (point too, so the comparison stays at equal length): at the
  preset's lengths every one of them is still improving, and the ranking the table is about flips
  with length. At the preset's lengths point leads MoG-1 on corrupt KNN; at 18,000 steps each MoG-1
  leads on all four metrics in two seeds, as in the paper (docs/recipes.md, "At N = 3, D = 3 every
  model is undertrained at the preset's length").

FAST mode (CI; every notebook < 3 minutes on 2 shared cores, including training
its `fast` preset models once) keeps the *kind* of every experiment but shrinks
the grid: N = 2, D = 2 wherever the paper's setting is not essential, two seeds
instead of four, the app's beta values {0, 1e-4, 1e-2} (shared checkpoints) and
two margins, no MoG-4 (Figure 7 shows C = 2 only), no Table 4 (its 3-digit D = 4 models are the
paper's setting or nothing: three more models and a second data set would double notebook 04's
FAST time; the notebook shows the paper's column alone). What was left out is printed by each
notebook. Where a figure's or table's FULL-mode models all ship with the package (Figures 1b, 3, 4,
7, 8 and 10, Table 1's N = 2, D = 2 row with the preset's MoG-2), FAST mode loads them instead of
training `fast` ones (`hedgekit.zoo.shipped_or_fast`): a `fast` HIB model barely hedges (docs/recipes.md, "The
`fast` HIB preset does not hedge in under a minute"), a shipped one does, and loading it costs no
training. Sweeps and the D = 1 number line keep `fast` models: none of theirs is shipped.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from hedgekit.errors import InputError
from hedgekit.zoo import PRESETS, Spec, find_checkpoint, ledger, load_checkpoint, shipped_or_fast

__all__ = ["SWEEP_DIVISOR", "FIG12_BETAS", "FAST_BETAS", "TABLE5_BETAS", "FIG6_MARGINS",
           "TABLE1_SETTINGS", "TABLE4_SETTING", "PAPER_K", "LONG_STEPS", "preset", "hib_k",
           "table1_training", "sweep", "table1_settings",
           "table1_specs", "table4_specs", "SEEDED_SETTINGS", "HEADLINE_SEEDS", "table1_seed_specs", "embedding_specs",
           "number_line_specs", "NUMBER_LINE_SPLITS", "number_line_centroids", "number_line_measures",
           "plurality_measures", "model_measures", "beta_specs", "table5_specs", "margin_specs", "notebook_specs",
           "all_specs", "recorded_table1", "recorded_meta", "seed_metas", "recorded_seeds", "recorded_table1_seeds",
           "table5_seed_specs", "notebook_record_specs"]

FIG12_BETAS = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2)  # HIB App. E, Figure 12
FAST_BETAS = (0.0, 1e-4, 1e-2)  # same values as the Streamlit app (shared fast checkpoints)
TABLE5_BETAS = (0.0, 1e-4)  # HIB Table 5
# Figure 6 gives no margin values; the hard loss is scale-equivariant for unconstrained
# embeddings, so a log-spaced range around the soft loss's natural scale (~1) is the test.
FIG6_MARGINS = (0.25, 0.5, 1.0, 2.0, 4.0)
TABLE1_SETTINGS = ((2, 2), (2, 3), (3, 2), (3, 3))  # (N, D) of HIB Tables 1, 2, 6, 7
TABLE4_SETTING = (3, 4)  # (N, D) of HIB Table 4 (App. C.1, "4D embeddings with 3-digit MNIST")
PAPER_K = 8  # HIB sec. 4.1: K = 8 Monte-Carlo samples per input (eq. 5)
LONG_STEPS = 18_000  # Table 1's MoG-2 at N = 2 and all of N = 3, D = 3 (module docstring)


# FULL-mode sweeps train 1/SWEEP_DIVISOR of the preset's steps (module docstring).
SWEEP_DIVISOR = 4


def preset(fast: bool) -> str:
    return "fast" if fast else "paper"


def sweep(spec: Spec) -> Spec:
    """``spec`` as a sweep member: FAST specs unchanged, paper specs at 1/`SWEEP_DIVISOR` of the steps."""
    if spec.preset == "fast":
        return spec
    steps = PRESETS[spec.preset][spec.recipe_key]["steps"] // SWEEP_DIVISOR
    return replace(spec, steps=steps)


def hib_k(dim: int, fast: bool) -> int | None:
    """K of a Table 1 / Table 4 / Figure 8 MoG model: the paper's `PAPER_K` at D >= 3 in FULL mode, else
    None (the preset's K; module docstring)."""
    return PAPER_K if dim >= 3 and not fast else None


def table1_training(n: int, d: int, fast: bool) -> dict[str, dict]:
    """`Spec` keywords (K and steps) of Table 1's point, MoG-1 and MoG-2 at one (N, D), by label.

    FULL mode: MoG models at `hib_k`, at the preset's steps except `LONG_STEPS` at K = 8 for MoG-2 at
    N = 2 and for all three models at N = 3, D = 3 (module docstring). FAST mode: the preset as is.
    """
    k = hib_k(d, fast)
    out = {"point": {}, "MoG-1": {"samples": k}, "MoG-2": {"samples": k}}
    if fast:
        return out
    long = {"samples": PAPER_K, "steps": LONG_STEPS}
    if (n, d) == (3, 3):
        return {"point": {"steps": LONG_STEPS}, "MoG-1": long, "MoG-2": long}
    if n == 2:
        out["MoG-2"] = long
    return out


def table1_settings(fast: bool) -> tuple[tuple[int, int], ...]:
    """(N, D) settings of Tables 1/2/6/7: all four in FULL mode, (2, 2) in FAST mode."""
    return ((2, 2),) if fast else TABLE1_SETTINGS


def _table1_trio(n: int, d: int, p: str, seed: int, training: dict[str, dict]) -> list[Spec]:
    return [Spec(kind="point", n_digits=n, dim=d, preset=p, seed=seed, **training["point"]),
            Spec(kind="hib", n_digits=n, dim=d, components=1, preset=p, seed=seed, **training["MoG-1"]),
            Spec(kind="hib", n_digits=n, dim=d, components=2, preset=p, seed=seed, **training["MoG-2"])]


def table1_specs(n: int, d: int, fast: bool, seed: int = 0) -> list[Spec]:
    """point, MoG-1, MoG-2 for one (N, D) setting (Table 1's three columns). FAST mode: the three shipped
    `paper` models at the preset's K and steps if all three are shipped, else three `fast` ones."""
    if fast:
        k = {"samples": hib_k(d, fast=False)}
        return shipped_or_fast(_table1_trio(n, d, "paper", seed, {"point": {}, "MoG-1": k, "MoG-2": k}),
                               _table1_trio(n, d, "fast", seed, table1_training(n, d, fast=True)))
    return _table1_trio(n, d, "paper", seed, table1_training(n, d, fast))


SEEDED_SETTINGS = TABLE1_SETTINGS + (TABLE4_SETTING,)  # (N, D) of Tables 1, 2 and 4, decided over retrained seeds
HEADLINE_SEEDS = 3  # independently trained seeds per model for those claims: the seed-to-seed spread is the noise


def table1_seed_specs(fast: bool, seeds: int = HEADLINE_SEEDS) -> dict[tuple[int, int, str], list[Spec]]:
    """(N, D, "point" / "MoG-1" / "MoG-2") -> the model of `table1_specs` trained with seeds 0..``seeds`` - 1, at
    the `SEEDED_SETTINGS` (every setting of Table 1 and Table 4's): what
    `hedgekit.papers.hib.claims.known_unknowns_verdict` takes as ``seeds=`` to decide the claims of Tables 1, 2 and
    4 over retrained seeds, so that a gap between two models or a model's τ is compared with their retraining
    spread, not with the spread of re-evaluating one model. FULL mode only (FAST: {}); seed 0 is the table's own
    model. Listed for notebook 04 so that ``reproduce --train-missing`` trains them ahead of its full run."""
    if fast:
        return {}
    out: dict[tuple[int, int, str], list[Spec]] = {}
    for n, d in SEEDED_SETTINGS:
        for s in range(seeds):
            for spec in table1_specs(n, d, False, seed=s):
                out.setdefault((n, d, spec.label), []).append(spec)
    return out


def table4_specs(fast: bool, seed: int = 0) -> list[Spec]:
    """Table 4's point, MoG-1, MoG-2 at (N, D) = `TABLE4_SETTING` with the `paper` preset; none in FAST mode.

    FAST mode skips Table 4 rather than shrinking it: its point is the 3-digit, D = 4 setting itself, and
    three `fast` models there (plus building the 3-digit data set on a fresh clone) would roughly double
    notebook 04's FAST time for numbers that say nothing about the paper's.
    """
    return [] if fast else table1_specs(*TABLE4_SETTING, fast=False, seed=seed)


def embedding_specs(fast: bool, seed: int = 0) -> dict[str, Spec]:
    """Models of notebook 02 (Figures 1b, 3, 4, 7, 8), by role.

    FAST mode leaves out the MoG-4 model of Figure 7's second row (with its evaluation ~75 s of the
    notebook's 3-minute budget on 2 shared cores) and loads the shipped `paper` point / MoG-1 / MoG-2
    (Figures 1b, 3, 4, 7) and 3-digit D = 3 MoG-1 (Figure 8) where they ship (`shipped_or_fast`); else
    `fast` models, with Figure 8 on 2-digit MNIST (the 3-digit one needs the 100k-image 3-digit training
    set built and one more model trained).
    """
    def roles(p: str, n3: int) -> dict[str, Spec]:
        return {"point": Spec(kind="point", preset=p, seed=seed),
                "mog1": Spec(kind="hib", components=1, preset=p, seed=seed),
                "mog2": Spec(kind="hib", components=2, preset=p, seed=seed),
                "mog4": Spec(kind="hib", components=4, preset=p, seed=seed),
                "mog1_3d": Spec(kind="hib", n_digits=n3, dim=3, components=1, samples=hib_k(3, p == "fast"),
                                preset=p, seed=seed)}

    paper = roles("paper", 3)
    if not fast:
        return paper
    quick = roles("fast", 2)
    out = {}
    for group in (("point", "mog1", "mog2"), ("mog1_3d",)):
        out.update(zip(group, shipped_or_fast([paper[r] for r in group], [quick[r] for r in group])))
    return out


def number_line_specs(fast: bool, seeds: int = 4) -> dict[str, list[Spec]]:
    """Notebook 03: D = 2 point/MoG-1 (Figure 10) and D = 1 point/MoG-1 for each seed (Figure 11, App. D).

    Every model is a full `paper` model in FULL mode (point 12,000, HIB 9,000 steps): App. D's adjacency
    counts are a property of the trained model, and shortened runs score lower (docs/recipes.md,
    "HIB App. D at full length"). The D = 1 HIB models draw the paper's `PAPER_K` samples per input
    (module docstring); FAST mode keeps the `fast` preset's own K.
    """
    p = preset(fast)
    n_seeds = min(seeds, 2) if fast else seeds
    d2 = [Spec(kind="point", preset="paper"), Spec(kind="hib", preset="paper")]
    if fast:  # Figure 10: the shipped `paper` models if they ship (module docstring)
        d2 = shipped_or_fast(d2, [Spec(kind="point", preset=p), Spec(kind="hib", preset=p)])
    return {"d2": d2,
            "point_d1": [Spec(kind="point", dim=1, preset=p, seed=s) for s in range(n_seeds)],
            "hib_d1": [Spec(kind="hib", dim=1, samples=None if fast else PAPER_K, preset=p, seed=s)
                       for s in range(n_seeds)]}


NUMBER_LINE_SPLITS = ("test_seen", "test_unseen")  # App. D's centroids: "derived from the test set embeddings"


def number_line_centroids(model, test_sets=None) -> tuple:
    """``(class ids, 1-D class centroids)`` of the D = 1 model ``model``: the mean of its embeddings' mixture mean
    per class (App. D; `hedgekit.evaluation.metrics.class_centroids`) over ``test_sets`` (`NdigitSet`s; default every
    image of 2-digit MNIST's `NUMBER_LINE_SPLITS`). InputError for a model whose embedding is not 1-D."""
    import numpy as np
    import torch

    from hedgekit.data import load_ndigit
    from hedgekit.evaluation import metrics

    if model.config["dim"] != 1:
        raise InputError(f"the number line needs a D = 1 model; got D = {model.config['dim']}")
    sets = [load_ndigit(2, split) for split in NUMBER_LINE_SPLITS] if test_sets is None else list(test_sets)
    x = torch.cat([t.tensors()[0] for t in sets])
    y = np.concatenate([t.labels for t in sets])
    return metrics.class_centroids(model.embed(x).mixture_mean().numpy()[:, 0], y)


def number_line_measures(model) -> dict:
    """App. D's measures of the D = 1 model ``model`` on every test image of both splits (`number_line_centroids`,
    `hedgekit.papers.hib.analysis.number_line_stats`): ``adjacency`` (of 99), ``mean_run`` and ``n_runs``. The
    ledger keeps them as the group ``number_line`` (`model_measures`), so that notebook 03 decides App. D over
    seeds whose checkpoints are not on the machine."""
    from hedgekit.papers.hib.analysis import number_line_stats

    ids, cent = number_line_centroids(model)
    return number_line_stats(cent, ids)


def plurality_measures(model) -> dict:
    """App. G's numbers of the trained model ``model`` on every image of its seen-class test split, from one
    evaluation of `hedgekit.papers.hib.protocol.evaluate_repeated` (seed 0, as notebook 04's own evaluation):
    plurality-vote KNN accuracy for each (gallery, probe) of Table 6, ``knnp_<gallery>_<probe>``, and the Kendall τ
    of η against it, Table 7's ``tau_knnp_<gallery>_<probe>`` (NaN for a point model). The ledger keeps them as
    the group ``plurality`` (`model_measures`), over which notebook 04 decides Tables 6 and 7 across seeds."""
    from hedgekit.data import load_ndigit
    from hedgekit.papers.hib.protocol import evaluate_repeated  # scipy, scikit-learn: not in a first cell

    ev = evaluate_repeated(model, load_ndigit(model.config["n_digits"], "test_seen"), "seed", repeats=1, seed=0)
    return {key: ev.mean(key) for key in ev.values if key.startswith(("knnp_", "tau_knnp_"))}


def model_measures(spec: Spec) -> dict:
    """The measures a notebook takes from the trained model ``spec`` beyond those its trainer records (group ->
    function of the model and its checkpoint's metadata, returning name -> number), which ``reproduce
    --train-missing`` records in the ledger as each model ends and ``reproduce --record-cached`` for the
    checkpoints already here (`hedgekit.repro.measured`): the number line's (`number_line_measures`) for the D = 1
    point and HIB models of 2-digit MNIST (notebook 03's App. D), and App. G's plurality KNN
    (`plurality_measures`) for Table 1's point and MoG-1 models at every seed of `table1_seed_specs` (notebook 04's
    Tables 6 and 7)."""
    if spec.kind in ("point", "hib") and spec.dim == 1 and spec.n_digits == 2 and spec.data == "ndigit":
        return {"number_line": lambda model, _meta: number_line_measures(model)}
    plural = {specs[0].name for (n, d, label), specs in table1_seed_specs(False).items()
              if (n, d) in TABLE1_SETTINGS and label in ("point", "MoG-1")}
    if spec.kind in ("point", "hib") and replace(spec, seed=0).name in plural:
        return {"plurality": lambda model, _meta: plurality_measures(model)}
    return {}


def beta_specs(fast: bool) -> list[Spec]:
    """Figure 12's models: MoG-1 at N = 3, D = 3 (FULL, a `sweep`) or N = 2, D = 2 (FAST), one per beta."""
    if fast:
        return [Spec(kind="hib", beta=b, preset="fast") for b in FAST_BETAS]
    return [sweep(Spec(kind="hib", n_digits=3, dim=3, beta=b, preset="paper")) for b in FIG12_BETAS]


def table5_specs() -> dict[tuple[int, int], list[Spec]]:
    """Table 5: MoG-1 with beta = 0 and 1e-4 for (N, D) = (2, 2) and (3, 3). Full mode only: in FAST mode notebook 05
    shows the committed report's Table 5 (models trained for seconds would give differences of noise)."""
    return {(n, d): [Spec(kind="hib", n_digits=n, dim=d, beta=b, preset="paper") for b in TABLE5_BETAS]
            for n, d in ((2, 2), (3, 3))}


def table5_seed_specs(seeds: int = HEADLINE_SEEDS) -> dict[tuple[int, int, float], list[Spec]]:
    """(N, D, β) -> Table 5's model (`table5_specs`) trained with seeds 0..``seeds`` - 1: what
    `hedgekit.papers.hib.claims.kl_margin_verdict` takes as ``seeds=`` (through `recorded_seeds`) to decide Table 5's
    gaps over retrained seeds. Full mode only; seed 0 is the table's own model. Listed for notebook 05, so that
    ``reproduce --train-missing --only 05`` trains them; β = 1e-4 at N = 2, D = 2 is Table 1's MoG-1, whose seeds
    notebook 04 trains too."""
    return {(n, d, spec.beta): [replace(spec, seed=s) for s in range(seeds)]
            for (n, d), group in table5_specs().items() for spec in group}


def margin_specs() -> tuple[Spec, list[Spec]]:
    """Figure 6: the soft contrastive point model and hard contrastive point models over margins (a `sweep`). Full
    mode only: in FAST mode notebook 05 shows the committed report's Figure 6 (models trained for seconds would
    give differences of noise)."""
    return (sweep(Spec(kind="point", preset="paper")),
            [sweep(Spec(kind="point", loss="hard", margin=m, preset="paper")) for m in FIG6_MARGINS])


def notebook_specs(notebook: str, fast: bool) -> list[Spec]:
    """Every model a notebook needs for its full run (in the order it loads them), deduplicated; notebook 04's
    include the seeds of `table1_seed_specs`."""
    out: list[Spec] = []
    if notebook.startswith("02"):
        out += list(embedding_specs(fast).values())
    elif notebook.startswith("03"):
        for group in number_line_specs(fast).values():
            out += group
    elif notebook.startswith("04"):
        for n, d in table1_settings(fast):
            out += table1_specs(n, d, fast)
        out += table4_specs(fast)
        for group in table1_seed_specs(fast).values():
            out += group
    elif notebook.startswith("05"):
        out += beta_specs(fast)
        if not fast:
            out += [s for group in table5_seed_specs().values() for s in group]
            soft, hard = margin_specs()
            out += [soft, *hard]
    seen, unique = set(), []
    for s in out:
        if s.name not in seen:
            seen.add(s.name)
            unique.append(s)
    return unique


def notebook_record_specs(notebook: str, fast: bool) -> list[Spec]:
    """The models of `notebook_specs` that the notebook decides on from their ledger records where the ledger holds
    them, loading no checkpoint: 03's number-line seeds after seed 0 (seed 0's line is drawn), and in FULL mode
    04's Table 1 seeds (`table1_seed_specs`) and 05's Table 5 seeds (`table5_seed_specs`) beyond the tables' own
    models. ``reproduce --train-missing`` and ``--list-models`` count such a model as held when the ledger holds
    it (`hedgekit.repro.catalog.ledger_read_models`)."""
    if notebook.startswith("03"):
        specs = number_line_specs(fast)
        return specs["point_d1"][1:] + specs["hib_d1"][1:]
    if fast or not notebook.startswith(("04", "05")):
        return []
    if notebook.startswith("04"):
        seeds = table1_seed_specs(False).values()
        own = [s for n, d in table1_settings(False) for s in table1_specs(n, d, False)] + table4_specs(False)
    else:
        seeds = table5_seed_specs().values()
        soft, hard = margin_specs()
        own = beta_specs(False) + [s for group in table5_specs().values() for s in group] + [soft, *hard]
    loaded = {spec.name for spec in own}
    return list({s.name: s for group in seeds for s in group if s.name not in loaded}.values())


def all_specs(fast: bool) -> list[Spec]:
    """Every model the HIB notebooks (01-05) need, deduplicated."""
    seen, out = set(), []
    for nb in ("02", "03", "04", "05"):
        for s in notebook_specs(nb, fast):
            if s.name not in seen:
                seen.add(s.name)
                out.append(s)
    return out


def recorded_table1(preset_name: str = "paper", seed: int = 0,
                    settings: tuple[tuple[int, int], ...] = TABLE1_SETTINGS) -> tuple[dict, list[str]]:
    """Table 1/2 results as recorded in the checkpoints of the grid (no re-evaluation).

    Returns ``(results, missing)``: (N, D, label) -> `hedgekit.papers.hib.protocol.RepeatedEvaluation`
    (one repetition: the metrics `hedgekit.zoo` stored at training time) for every model of
    the Table 1 grid that has a checkpoint, and the names of those that have none.
    ``settings=(TABLE4_SETTING,)`` reads Table 4's three models instead.
    ``python -m hedgekit table1`` prints them beside the paper.
    """
    from hedgekit.papers.hib.protocol import RepeatedEvaluation  # scipy, scikit-learn: 2.2 s of a first cell

    results, missing = {}, []
    for n, d in settings:
        for spec in table1_specs(n, d, fast=False, seed=seed):
            spec = spec if preset_name == spec.preset else spec.at_preset(preset_name)
            path = find_checkpoint(spec)
            if path is None:
                missing.append(spec.name)
                continue
            _, meta = load_checkpoint(path)
            results[(n, d, spec.label)] = RepeatedEvaluation.from_metrics(
                spec.label, n, d, meta["metrics"], int(meta.get("eval_images", 0)))
    return results, missing


def recorded_meta(spec: Spec) -> dict | None:
    """The metadata of ``spec``'s checkpoint where it is shipped or cached (its measures must agree with the
    ledger's record of it, `hedgekit.zoo.ledger.check_checkpoint`), else the ledger's record of its measures in that
    form (`hedgekit.zoo.ledger.ledger_meta`, ``source`` "ledger"), else None. Nothing trains."""
    path = find_checkpoint(spec)
    if path is None:
        return ledger.ledger_meta(spec)
    meta = dict(load_checkpoint(path)[1], path=str(path))
    ledger.check_checkpoint(spec, meta)
    return meta


def seed_metas(seed_specs: Mapping[tuple, Sequence[Spec]], meta=None) -> tuple[dict, list[str]]:
    """The seeds of ``seed_specs`` (key -> its specs in seed order, e.g. `table1_seed_specs`, `table5_seed_specs`)
    that have measures: ``(metas, missing)``, key -> [(spec, metadata)] in seed order, and the names of the seeds'
    models that have none. ``meta``: spec -> that model's metadata or None (default `recorded_meta`: its
    checkpoint, else the ledger), e.g. a notebook's `hedgekit.repro.session.Session.meta` or
    `~hedgekit.repro.session.Session.cached_meta`."""
    out, missing = {}, []
    for key, specs in seed_specs.items():
        for spec in specs:
            m = (meta or recorded_meta)(spec)
            if m is None:
                missing.append(spec.name)
            else:
                out.setdefault(key, []).append((spec, m))
    return out, missing


def recorded_seeds(seed_specs: Mapping[tuple, Sequence[Spec]], meta=None, measures=None) -> tuple[dict, list[str]]:
    """The seeds of ``seed_specs`` (`seed_metas`) as recorded at training time (no re-evaluation), in the form the
    verdicts take as ``seeds=`` (`hedgekit.papers.hib.claims.known_unknowns_verdict`, ``kl_margin_verdict``).

    Returns ``(seeds, missing)``: key -> one `hedgekit.papers.hib.protocol.RepeatedEvaluation` per seed that has
    measures, in seed order (labelled as its spec), and the names of the seeds' models that have none (``reproduce
    --train-missing`` trains them). A claim uses the seeds only where both of its rows have two or more. ``meta``
    (optional): spec -> that model's metadata or None where it has none. By default a seed's checkpoint where it
    is on this machine, else the ledger's record of it (`recorded_meta`); a notebook's
    `hedgekit.repro.session.Session.meta` trains a missing seed and lists its checkpoint in the run's header (then
    ``missing`` is empty); `~hedgekit.repro.session.Session.cached_meta` lists the cached ones and the ledger's and
    trains none. `hedgekit.zoo.ledger.seed_sources` says where a row's seeds came from.

    Each seed's measures of the groups `model_measures` names for it (e.g. ``plurality``) join its metrics where
    ``measures(spec, group)`` gives them (name -> number, or None): by default the ledger's record of the group; a
    notebook's `~hedgekit.repro.session.Session.measures` measures a checkpoint that is here."""
    from hedgekit.papers.hib.protocol import RepeatedEvaluation  # scipy, scikit-learn: 2.2 s of a first cell

    metas, missing = seed_metas(seed_specs, meta)
    read = measures or (lambda spec, group: ledger.measures(spec.name, group))
    out = {}
    for key, pairs in metas.items():
        source = ledger.seed_sources(m for _, m in pairs)  # the verdict's rows say where their seeds came from
        out[key] = []
        for spec, m in pairs:
            metrics = dict(m["metrics"])
            for group in model_measures(spec):
                metrics.update({k: v for k, v in (read(spec, group) or {}).items() if isinstance(v, (int, float))})
            out[key].append(replace(RepeatedEvaluation.from_metrics(spec.label, spec.n_digits, spec.dim, metrics,
                                                                    int(m.get("eval_images", 0))), source=source))
    return out, missing


def recorded_table1_seeds(seeds: int = HEADLINE_SEEDS, meta=None, measures=None) -> tuple[dict, list[str]]:
    """`recorded_seeds` of Table 1's seeds (`table1_seed_specs`): (N, D, label) -> one evaluation per seed."""
    return recorded_seeds(table1_seed_specs(False, seeds), meta, measures)
