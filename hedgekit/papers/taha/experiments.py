"""Which models notebook 08 (Taha et al. 2019, heteroscedastic triplet retrieval) uses.

Every model is a `hedgekit.zoo.Spec` of kind "triplet" (the vanilla soft-margin triplet loss, the paper's
"Tri-ResNet") or "het" (eq. 11), loaded or trained by `hedgekit.zoo.load_or_train`; how they are measured
is `hedgekit.papers.taha.protocol`.

* Table 1 analogue (DukeMTMC-reID -> unseen-class retrieval): 2-digit MNIST, trained on the seen classes,
  queried on the unseen ones; triplet vs het, each without ("main") and with ("aug") occlusion augmentation.
* Table 2 analogue (Clothing1M -> Fashion-MNIST with look-alike label noise): the clean subset only
  (triplet, "clean"), triplet and het on the noisy labels ("noisy").
* Table 2 with image-dependent noise (`NOISE_ROWS`, recipes "ambclean" / "ambnoisy"): labels flip
  where a clean classifier is unsure, 10% of train and test images are blended look-alike garments with clean
  labels, the clean subset is 0.5%; run by `hedgekit.papers.taha.noise_study`. `TABLE2_ROWS` ("clean" /
  "noisy") stay as the "independent noise" contrast, whose flips ignore the image.
* Tables 3/4 analogue (HDD's imbalanced classes): triplet and het on long-tailed Fashion-MNIST ("longtail");
  Fashion-MNIST rather than N-digit MNIST because per-class mAP of head vs tail classes needs the test
  classes to be the training classes (N-digit retrieval queries unseen classes).

FAST mode trains the "fast" preset (150 steps) once; full mode the "paper" preset (1,500 steps), `FULL_RUNS`
seeds per row (the paper's 5) unless the notebook asks for another number (``runs``): 60 models, 40-153 s each
(training and its evaluation, one process per model, two or three sharing 2 cores; docs/recipes.md).
"""
from __future__ import annotations

from hedgekit.errors import InputError
from hedgekit.zoo import Spec

__all__ = ["DIM", "FULL_RUNS", "FAST_RUNS", "TABLE1_ROWS", "TABLE2_ROWS", "NOISE_ROWS", "LONGTAIL_ROWS", "runs", "runs_text",
           "table1_specs",
           "table2_specs", "noise_specs", "longtail_specs", "notebook_specs"]

DIM = 16  # embedding size d (the head emits d + 1 numbers); Hermans et al.'s 128 is more than 10 classes need
FULL_RUNS = 5  # the paper: 5 runs per row (sec. 5)
FAST_RUNS = 1

# row label -> (kind, recipe), in the order of the paper's tables
TABLE1_ROWS = {"Tri": ("triplet", "main"), "Tri + Hetero": ("het", "main"),
               "Tri + Aug": ("triplet", "aug"), "Tri + Aug + Hetero": ("het", "aug")}
TABLE2_ROWS = {"clean subset only": ("triplet", "clean"), "Tri on noisy": ("triplet", "noisy"),
               "Tri + Hetero on noisy": ("het", "noisy")}
NOISE_ROWS = {"clean subset only": ("triplet", "ambclean"), "Tri on noisy": ("triplet", "ambnoisy"),
              "Tri + Hetero on noisy": ("het", "ambnoisy")}
LONGTAIL_ROWS = {"Tri": ("triplet", "longtail"), "Tri + Hetero": ("het", "longtail")}


def runs(fast: bool, n: int | None = None) -> int:
    """Runs per row: ``n`` if given, else `FAST_RUNS` / `FULL_RUNS`."""
    if n is None:
        return FAST_RUNS if fast else FULL_RUNS
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InputError(f"runs must be an integer >= 1; got {n!r}")
    return n


def runs_text(fast: bool, n: int | None = None) -> str:
    """The mode line notebook 08 prints: "FULL mode: 5 run(s) per row (the paper's 5)"; a missing ``n`` reads as
    the count `runs` resolves it to, never as "None"."""
    k = runs(fast, n)
    why = "the paper's 5" if not fast and n is None else "FAST default" if n is None else "set by RUNS"
    return f"{'FAST' if fast else 'FULL'} mode: {k} run(s) per row ({why})"


def _specs(rows: dict, data: str, fast: bool, seed: int, n: int | None, steps: int | None = None
           ) -> dict[str, list[Spec]]:
    preset = "fast" if fast else "paper"
    return {label: [Spec(kind=kind, data=data, recipe=recipe, dim=DIM, preset=preset, seed=seed + r, steps=steps)
                    for r in range(runs(fast, n))] for label, (kind, recipe) in rows.items()}


def table1_specs(fast: bool, seed: int = 0, n_runs: int | None = None) -> dict[str, list[Spec]]:
    """Table 1 row -> one Spec per run (2-digit MNIST, P x K = 18 x 4 as sec. 5.1; semi-hard mining, see
    `hedgekit.zoo.PRESETS`)."""
    return _specs(TABLE1_ROWS, "ndigit", fast, seed, n_runs)


def table2_specs(fast: bool, seed: int = 0, n_runs: int | None = None, steps: int | None = None
                 ) -> dict[str, list[Spec]]:
    """Table 2 row -> one Spec per run (Fashion-MNIST, semi-hard mining, 10 classes x 10 as sec. 5.2)."""
    return _specs(TABLE2_ROWS, "fashion", fast, seed, n_runs, steps)


def noise_specs(fast: bool, seed: int = 0, n_runs: int | None = None, steps: int | None = None
                ) -> dict[str, list[Spec]]:
    """Table 2 with image-dependent noise (`NOISE_ROWS`): row -> one Spec per run; ``steps`` overrides the
    preset's (names then read e.g. ``paper500``)."""
    return _specs(NOISE_ROWS, "fashion", fast, seed, n_runs, steps)


def longtail_specs(fast: bool, seed: int = 0, n_runs: int | None = None) -> dict[str, list[Spec]]:
    """Tables 3/4 analogue row -> one Spec per run (long-tailed Fashion-MNIST)."""
    return _specs(LONGTAIL_ROWS, "fashion", fast, seed, n_runs)


def notebook_specs(notebook: str, fast: bool, seed: int = 0, n_runs: int | None = None) -> list[Spec]:
    """Every model notebook 08 needs, the most telling first (Table 2, Table 1, long tail, then in FULL mode the
    image-dependent-noise study of `hedgekit.papers.taha.noise_study`, listed so that ``reproduce --train-missing``
    trains it ahead of the notebook's full run; run by run). Other notebooks: []. Used by ``python -m hedgekit
    reproduce --list-models``."""
    if not notebook.startswith("08"):
        return []
    groups = [f(fast, seed, n_runs) for f in (table2_specs, table1_specs, longtail_specs)]
    groups += [] if fast else [noise_specs(fast, seed, n_runs)]
    return [specs[r] for r in range(runs(fast, n_runs)) for g in groups for specs in g.values()]
