"""Taha et al. 2019's Table 2 with image-dependent label noise: can sigma^2 clean a gallery when the
noise follows the images?

The set-up (`hedgekit.papers.taha.experiments.NOISE_ROWS`, recipes "ambclean" / "ambnoisy" of
`hedgekit.zoo.triplet_data`): Fashion-MNIST where 38% of the labels flip inside look-alike groups towards the
class a clean classifier confuses, more often where it is unsure; 10% of the training and test images are two
look-alike garments blended (clean labels: the dominant one); 0.5% of the training labels are verified clean.
Per run (one seed for the three models), `measure_run` reads:

* Table 2's rows: mAP of the clean-subset triplet, the triplet and the heteroscedastic triplet on noisy labels,
  and the heteroscedastic model's gallery after removing 20% at random or its 20% most uncertain
  (`protocol.cleaning_rows`), on the blended test set (queries and gallery share the split of the run's seed);
* why cleaning helps or not: the share of blended items among the removed 20% against their share of the
  gallery, and Fig. 6's r between query AP and sigma^2;
* label-noise detection on the training set: precision of sigma^2, small loss and cleanlab at 5/10/20%
  (`protocol.detection_scores`), against the base rate of flipped labels; and Fig. 5's wider reading, the share
  of flipped *or blended* images among the 10% most uncertain, against its base rate.

`hedgekit.papers.taha.claims.noise_verdict` decides the claims; run ``python -m hedgekit.papers.taha.noise_study
--runs 5`` to train (or load) the models and print the tables.
"""
from __future__ import annotations

from types import SimpleNamespace
from typing import Mapping, Sequence

import numpy as np

from hedgekit.errors import InputError
from hedgekit.evaluation import metrics as M
from hedgekit.papers.taha import protocol as P
from hedgekit.papers.taha.claims import NOISE_TITLE, noise_verdict
from hedgekit.papers.taha.experiments import NOISE_ROWS, noise_specs, table2_specs
from hedgekit.papers.verdict import Spread
from hedgekit.zoo import load_or_train, triplet_data

__all__ = ["HET", "CLEANING_ROWS", "measure_run", "summarise", "map_table", "cleaning_pairs", "detection_frame",
           "detection_summary", "run_study"]

HET = "Tri + Hetero on noisy"  # the model whose gallery is cleaned and whose sigma^2 detects flipped labels
CLEANING_ROWS = ("random cleaning 20%", "uncertainty cleaning 20%")


def measure_run(models: Mapping, seed: int, test: Mapping, train: Mapping | None = None) -> dict:
    """One run's numbers (module docstring). ``models``: row label -> trained model, with `HET` among them;
    ``test`` / ``train``: `hedgekit.zoo.triplet_data` of the run's het spec (``test`` may lack ``ambiguous``;
    ``train`` None skips detection). The run's ``seed`` draws the query/gallery split and the random removal."""
    if HET not in models:
        raise InputError(f"measure_run needs the {HET!r} model; got rows {sorted(models)}")
    labels = np.asarray(test["labels"])
    maps, het = {}, None
    for label, model in models.items():
        emb, u = P.embed(model, test["images"])
        maps[label] = P.retrieval_metrics(emb, labels, seed)["map"]
        if label == HET:
            het = emb, u
    emb, u = het
    rows = P.cleaning_rows(emb, u, labels, seed=seed)
    maps.update(zip(CLEANING_ROWS, (rows["random"], rows["uncertain"])))
    q, g = P.split(labels, seed)
    out = {"map": maps, "r": P.ap_vs_uncertainty(M.retrieval_average_precision(emb[q], labels[q], emb[g], labels[g]),
                                                 u[q])["r"]}
    if "ambiguous" in test:
        removed = g[np.argsort(-u[g], kind="stable")[: int(round(P.CLEANING_FRACTION * len(g)))]]
        amb = np.asarray(test["ambiguous"], dtype=bool)
        out.update(ambiguous_removed=float(amb[removed].mean()), ambiguous_gallery=float(amb[g].mean()))
    if train is not None:
        emb_t, u_t = P.embed(models[HET], train["images"])
        scores = P.detection_scores(emb_t, u_t, train["labels"], seed=seed)
        out["detection"] = P.detection_table(scores, train["flipped"])
        out["noise_rate"] = float(np.mean(train["flipped"]))
        if "ambiguous" in train:  # Fig. 5's "mislabelled or ambiguous": either kind among the 10% most uncertain
            odd = np.asarray(train["flipped"], dtype=bool) | np.asarray(train["ambiguous"], dtype=bool)
            (hit,) = P.precision_recall_at(u_t, odd, (0.1,))
            out.update(odd_top=hit["precision"], odd_rate=float(odd.mean()))
    return out


def summarise(runs: Sequence[Mapping]) -> dict:
    """Runs (`measure_run`) -> ``map``: row -> `Spread` over runs (in run order, so rows pair), ``r``: the runs'
    r values, ``ambiguous_removed`` / ``ambiguous_gallery`` / ``noise_rate`` / ``odd_top`` / ``odd_rate`` (flipped or
    blended: share among the 10% most uncertain training images, and overall): `Spread` where measured,
    ``detection``: `detection_summary`, ``runs``: their number."""
    if not runs:
        raise InputError("summarise needs at least one run")
    out = {"map": P.mean_std([r["map"] for r in runs]), "r": [float(r["r"]) for r in runs], "runs": len(runs)}
    for key in ("ambiguous_removed", "ambiguous_gallery", "noise_rate", "odd_top", "odd_rate"):
        if all(key in r for r in runs):
            out[key] = Spread([r[key] for r in runs])
    if all("detection" in r for r in runs):
        out["detection"] = detection_summary([r["detection"] for r in runs])
    return out


def detection_summary(tables: Sequence) -> dict:
    """{(detector, fraction): `Spread` of precision over runs} from `protocol.detection_table` frames."""
    keys = [(d, round(float(f), 4)) for d, f in zip(tables[0].detector, tables[0].fraction)
            if d != "cleanlab (own threshold)"]
    return {k: Spread([float(t[(t.detector == k[0]) & ((t.fraction - k[1]).abs() < 1e-9)].precision.iloc[0])
                       for t in tables]) for k in keys}


def map_table(summary: Mapping):
    """DataFrame: Table 2's rows, our mAP mean ± std (points) over runs."""
    import pandas as pd

    return pd.DataFrame([{"row": k, "mAP": 100 * v[0], "± std": 100 * v[1], "runs": len(v.values)}
                         for k, v in summary["map"].items()]).set_index("row")


def cleaning_pairs(summary: Mapping):
    """DataFrame, one row per run: mAP (points) after random and after uncertainty cleaning of the same gallery, and
    their difference, the paired effect `claims.noise_verdict` reads (Table 2's +2.24 in the paper)."""
    import pandas as pd

    rand, unc = (np.asarray(summary["map"][row].values) * 100 for row in CLEANING_ROWS)
    return pd.DataFrame({"random cleaning 20%": rand, "uncertainty cleaning 20%": unc,
                         "uncertainty − random": unc - rand}, index=pd.RangeIndex(len(rand), name="run"))


def detection_frame(summary: Mapping):
    """DataFrame of flipped-label precision, mean ± std over runs, one row per (detector, share removed), with the
    base rate of flipped labels beside it: a detector is only useful above it. Needs ``detection`` and
    ``noise_rate`` in ``summary`` (`run_study` with detection)."""
    import pandas as pd

    if "detection" not in summary or "noise_rate" not in summary:
        raise InputError("detection_frame needs a summary measured with detection (run_study(detection=True))")
    base = summary["noise_rate"][0]
    return pd.DataFrame([{"detector": d, "removed %": int(round(100 * f)), "precision": v[0], "± std": v[1],
                          "base rate": base, "above base rate": v[0] - base}
                         for (d, f), v in summary["detection"].items()])


def run_study(fast: bool = False, n_runs: int | None = None, seed: int = 0, steps: int | None = None,
              detection: bool = True, load=None, independent: bool = False, detect_images: int | None = None) -> dict:
    """Load (or train) `NOISE_ROWS`' models for each run and `summarise` `measure_run` over them; with
    ``independent`` the same measurements on the "independent noise" contrast (`TABLE2_ROWS`: recipes "clean" /
    "noisy", flips that ignore the image, no blended images, a 5% clean subset).

    ``load``: spec -> model, e.g. a notebook's ``Session.model`` (it records the checkpoints); by default
    `hedgekit.zoo.load_or_train`, whose checkpoints come back as ``checkpoints`` (preset, steps, train_seconds,
    name) for `claims.noise_verdict`'s training paragraph. ``detect_images``: score label-noise detection on that
    many training images (a fixed random subset; None: all 60k, ~1-3 CPU-minutes per run for the out-of-fold
    classifier). Also returns the ``specs``."""
    specs = (table2_specs if independent else noise_specs)(fast, seed, n_runs, steps)
    records = []

    def default_load(spec):
        model, meta = load_or_train(spec, progress=False)
        records.append(SimpleNamespace(name=spec.name, preset=spec.preset,
                                       steps=int(meta.get("train_config", {}).get("steps", 0)),
                                       train_seconds=float(meta.get("train_seconds", 0.0))))
        return model

    load = load or default_load
    runs = []
    for i in range(len(specs[HET])):
        models = {label: load(specs[label][i]) for label in specs}
        het = specs[HET][i]
        train = triplet_data(het) if detection else None
        if train is not None and detect_images is not None:
            keep = np.sort(np.random.default_rng(seed).permutation(len(train["labels"]))[:detect_images])
            train = {k: v[keep] for k, v in train.items()}
        runs.append(measure_run(models, het.seed, triplet_data(het, "test"), train))
    return {**summarise(runs), "checkpoints": records, "specs": specs}


def _main(argv: Sequence[str] | None = None) -> None:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fast", action="store_true", help="the fast preset (150 steps) instead of paper (1,500)")
    ap.add_argument("--runs", type=int, default=None, help="runs (seeds) per row; default 5 (1 with --fast)")
    ap.add_argument("--steps", type=int, default=None, help="override the preset's steps")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--independent", action="store_true", help="the independent-noise contrast (clean / noisy)")
    a = ap.parse_args(argv)
    res = run_study(a.fast, a.runs, a.seed, a.steps, independent=a.independent)
    print(map_table(res).round(2).to_string())
    for key in ("ambiguous_removed", "ambiguous_gallery", "noise_rate", "odd_top", "odd_rate"):
        if key in res:
            print(f"{key}: {res[key][0]:.3f} ± {res[key][1]:.3f}")
    print("r(AP, sigma^2) per run:", [round(x, 3) for x in res["r"]])
    for (d, f), v in res.get("detection", {}).items():
        print(f"precision {d:12s} at {100 * f:4.0f}%: {v[0]:.3f} ± {v[1]:.3f}  runs {[round(x, 3) for x in v.values]}")
    title = ("08 Table 2, independent-noise contrast: Fashion-MNIST, flips that ignore the image, 5% clean"
             if a.independent else NOISE_TITLE)
    print(noise_verdict(res, res["checkpoints"], title).markdown())


if __name__ == "__main__":
    _main()
