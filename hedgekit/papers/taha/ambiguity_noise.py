"""Taha et al. 2019's Table 2 with noise that is not a function of the pixels: can sigma^2 clean a
gallery, and find flipped labels, when the labels are noisy the way Clothing1M's are?

The image-dependent analogue (`hedgekit.papers.taha.noise_study`, recipes "ambnoisy" / "ambclean") stays as the contrast:
there the flips are a deterministic function of the pixels (a labeller's uncertainty percentile, always to its
arg-max) and the blended images never flip, so a long-trained network learns the noisy labelling and sigma^2 has
little left to flag. Here (`Design`, data by `run_data`):

* **noise**: `hedgekit.data.subsets.ambiguity_noise`, drawn afresh for each run's seed: single garments flip at
  random with a probability per ambiguity level (the clean labeller's uncertainty terciles, `Design.flips`) to a
  class drawn from the labeller's posterior; blends of two look-alike garments (`Design.blends` of the training
  set) carry the partner's label with probability 1 - blend weight; 0.5% of the labels are verified clean;
* **a gallery with room for cleaning**: `Design.test_blends` of the test images (queries and gallery) are blends,
  labelled with the dominant garment (the test set is clean, as Clothing1M's), so the 20% removed can be mostly them;
* **training that does not memorise the noise**: eq. 11's weight decay lambda ||W||^2 (`Design.weight_decay`:
  Adam's coupled L2 coefficient 2 lambda, lambda = 1e-4 from the paper's "lambda = 10e-4", sec. 5.1, which sec. 5.2
  keeps) and an early stop on a held-out *noisy* validation split (`fit_early_stopped`; the heteroscedastic model
  reads its mAP after removing its 20% most uncertain validation-gallery items, `Design.stop_on`; the test gallery
  is never looked at);
* **randomness counted**: random cleaning averaged over `Design.permutations` permutations per run, a fresh noise
  draw per run, so the paired interval over runs holds every source of variation.

`run_study` trains the three rows of `hedgekit.papers.taha.experiments.NOISE_ROWS` per seed, measures them with
`noise_study.measure_run` (random row replaced by the permutation average) and decides them with
`claims.noise_verdict`; it returns the table rows and `sigma_figure`, sigma^2 against the truth.
The trained models are kept in the zoo's one model store (`train_run`); a FAST run of notebook 08 does not run the
study (on the seeds a quick tour affords its numbers are noise) and shows the committed report's record instead.
Run ``python -m hedgekit.papers.taha.ambiguity_noise --seeds 0 1 2 3 4`` (docs/recipes.md, "Taha Table 2 with
noise that is not a function of the pixels").
"""
from __future__ import annotations

import functools
import hashlib
import json
import time
import warnings
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Sequence

import numpy as np
import torch

from hedgekit.data.subsets import AMBIGUITY_FLIPS, ambiguity_noise, clean_posterior, overlay_lookalikes
from hedgekit.checks import check_writable
from hedgekit.data.fashion import load_fashion
from hedgekit.errors import CheckpointError, InputError
from hedgekit.evaluation import metrics as M
from hedgekit.evaluation.retrieval import map_after_removing_uncertain
from hedgekit.papers.taha import noise_study as NS
from hedgekit.papers.taha import protocol as P
from hedgekit.papers.taha.claims import noise_verdict
from hedgekit.papers.taha.experiments import DIM, NOISE_ROWS
from hedgekit.papers.verdict import Spread
from hedgekit.paths import cache_path
from hedgekit.training.fit import seed_everything
from hedgekit.training.triplets import TripletConfig, fit_triplets
from hedgekit.viz.style import figure
from hedgekit.zoo import Spec
from hedgekit.zoo.store import checkpoint_bytes, load_checkpoint, save_checkpoint

__all__ = ["TITLE", "STOP_SCORES", "Design", "run_data", "validation_map", "cleaned_validation_map",
           "fit_early_stopped", "train_run", "cached_model_path", "run_digest", "measure", "maps_after_removals",
           "blends_removed_map", "run_study", "sigma_groups", "sigma_figure"]

TITLE = "08 Table 2, noise that is not a function of the pixels: random flips, blends with either label, 0.5% clean"


@dataclass(frozen=True)
class Design:
    """One design of the analogue (every number a run uses; docs/recipes.md records each design tried). The
    defaults are the design fixed on seeds 0-4 and confirmed on seeds 5-9 ("B"; "A" is ``stop_on="map"``).

    Attributes:
        flips: flip probability per ambiguity level of a single garment (`ambiguity_noise`).
        blends / test_blends: share of blended look-alike pairs among the training / test images.
        alpha: range of a blend's own weight a (its label is the partner's with probability 1 - a).
        clean_fraction: verified-clean share of the training labels (the "clean subset only" row trains on it).
        val_images: training images held out, with their noisy labels, to pick the early stop.
        steps: most optimiser steps (the `paper` preset's 1,500); eval_every: steps between validation scores;
        patience: validation scores without a gain before training stops.
        stop_on: the heteroscedastic model's validation score, "map" (`validation_map`) or "cleaned map"
            (`cleaned_validation_map`: after removing its 20% most uncertain validation gallery items); the
            triplet rows always read "map".
        weight_decay: Adam's L2 coefficient, 2 lambda of eq. 11.
        permutations: random removals averaged per run for the random-cleaning row.
    """

    flips: tuple = AMBIGUITY_FLIPS
    blends: float = 0.3
    test_blends: float = 0.3
    alpha: tuple = (0.55, 0.75)
    clean_fraction: float = 0.005
    val_images: int = 5000
    steps: int = 1500
    eval_every: int = 100
    patience: int = 3
    stop_on: str = "cleaned map"
    weight_decay: float = 2e-4
    permutations: int = 20

    def __post_init__(self) -> None:
        if self.permutations < 20:
            raise InputError(f"random cleaning is averaged over >= 20 permutations; got {self.permutations}")
        if self.val_images < 100 or self.eval_every < 1 or self.patience < 1 or self.steps < 1:
            raise InputError(f"val_images >= 100, steps, eval_every and patience >= 1; got {self}")
        if self.stop_on not in ("map", "cleaned map"):  # the keys of STOP_SCORES
            raise InputError(f"stop_on must be 'map' or 'cleaned map'; got {self.stop_on!r}")

    @property
    def key(self) -> str:
        """A short hash of every field: the name of this design's cached models."""
        return hashlib.sha1(repr(sorted(asdict(self).items())).encode()).hexdigest()[:10]


# --------------------------------------------------------------------------- data
def fashion(split: str) -> tuple[np.ndarray, np.ndarray]:
    """(images, labels) of a Fashion-MNIST split (tests replace this function with small synthetic sets)."""
    ds = load_fashion(split)
    return ds.images, ds.labels.copy()


@functools.lru_cache(maxsize=1)
def _labeller(digest: str) -> np.ndarray:
    """The clean labeller's posterior on the unblended training images (one fit per process and training set,
    named by ``digest``; ~10 s)."""
    x, y = fashion("train")
    return clean_posterior(x, y, seed=0)


def run_data(seed: int, design: Design = Design()) -> dict:
    """One run's data: ``train`` and ``val`` (a held-out split of the noisy training set, ``design.val_images``
    items outside the clean subset), each {images, labels, true, flipped, ambiguous, clean, level}, and ``test``
    {images, labels, ambiguous} (blends labelled with their dominant garment). Everything is drawn from ``seed``."""
    x, y = fashion("train")
    probs = _labeller("".join(hashlib.sha1(np.ascontiguousarray(a)).hexdigest() for a in (x, y)))
    n = ambiguity_noise(x, y, probs, design.flips, design.blends, design.alpha, design.clean_fraction, seed=seed)
    arrays = {k: getattr(n, k) for k in ("images", "labels", "true", "flipped", "ambiguous", "clean", "level")}
    pool = np.flatnonzero(~n.clean)
    if design.val_images >= len(pool):
        raise InputError(f"val_images must leave training images; got {design.val_images} of {len(pool)}")
    val = np.zeros(len(y), bool)
    val[np.random.default_rng([seed, 4]).choice(pool, design.val_images, replace=False)] = True
    xt, yt = fashion("test")
    test = overlay_lookalikes(xt, yt, fraction=design.test_blends, alpha=design.alpha, seed=10_000 + seed)
    return {"train": {k: v[~val] for k, v in arrays.items()}, "val": {k: v[val] for k, v in arrays.items()},
            "test": {"images": test.images, "labels": yt, "ambiguous": test.ambiguous}}


# --------------------------------------------------------------------------- training
class _Stop(Exception):
    """Raised from `fit_triplets`' callback when the validation score has stopped improving."""


def validation_map(model, images, labels, seed: int = 0) -> float:
    """mAP of ``model`` on a labelled set, split into queries and gallery by `protocol.split` (the early stop's
    score on the noisy validation split)."""
    emb, _ = P.embed(model, images)
    labels = np.asarray(labels)
    q, g = P.split(labels, seed)
    return M.mean_average_precision(emb[q], labels[q], emb[g], labels[g])


def cleaned_validation_map(model, images, labels, seed: int = 0) -> float:
    """mAP of ``model`` on a labelled set (`validation_map`'s split) after removing the `protocol.CLEANING_FRACTION`
    most uncertain gallery items: the score of a model whose sigma^2 is meant to clean a gallery."""
    emb, u = P.embed(model, images)
    labels = np.asarray(labels)
    q, g = P.split(labels, seed)
    (out,) = map_after_removing_uncertain(emb[q], labels[q], emb[g], labels[g], u[g], [P.CLEANING_FRACTION])
    return out["map"]


STOP_SCORES = {"map": validation_map, "cleaned map": cleaned_validation_map}


def fit_early_stopped(model, images, labels, cfg: TripletConfig, val_images, val_labels, seed: int = 0,
                      patience: int = 3, score=validation_map) -> dict:
    """`fit_triplets` with an early stop: at every log step (``cfg.log_every``) ``score(model, val_images,
    val_labels, seed)`` is read; training stops after ``patience`` reads without a new best, and the model is left
    with the weights of the best read (ties: the earliest). Returns ``best_step`` (the step of those weights),
    ``best_score``, ``stopped_at`` (the last step trained), ``scores`` [(step, score)] and ``seconds``."""
    scores, best = [], {"score": -np.inf, "step": -1, "state": None}
    t0 = time.perf_counter()

    def read(step: int, row: dict) -> None:
        was_training = model.training
        model.eval()
        s = float(score(model, val_images, val_labels, seed))
        model.train(was_training)
        scores.append((step, s))
        if s > best["score"]:
            best.update(score=s, step=step, state={k: v.detach().clone() for k, v in model.state_dict().items()})
        elif len(scores) - 1 - next(i for i, (st, _) in enumerate(scores) if st == best["step"]) >= patience:
            raise _Stop

    try:
        fit_triplets(model, images, labels, cfg, seed=seed, progress=False, callback=read)
    except _Stop:
        pass
    model.load_state_dict(best["state"])
    model.to(memory_format=torch.contiguous_format).eval()
    return {"best_step": best["step"], "best_score": best["score"], "stopped_at": scores[-1][0], "scores": scores,
            "seconds": time.perf_counter() - t0}


def train_run(seed: int, design: Design, data: dict, cache: bool = True) -> tuple[dict, list]:
    """The three `NOISE_ROWS` models of one run (``data``: `run_data` of ``seed``): the triplet on the clean subset,
    the triplet and the heteroscedastic triplet on the noisy labels; each early-stopped on ``data["val"]``, built and
    configured as the zoo's `paper` Fashion-MNIST triplet specs with ``design``'s steps and weight decay.

    The models live in the zoo's one model store: `cached_model_path` names each file, written by
    `hedgekit.zoo.store.save_checkpoint` (hashed, finite weights) with the early stop's record, ``design``'s
    fields, the row, seed, kind and the SHA-1 of the run's training data (`run_digest`) in its meta. A stored file
    is used only if `load_checkpoint` accepts it and its meta names this design, data and network; else the model
    is retrained and the file replaced, with a warning saying why. With ``cache=False`` nothing is read or written.
    Returns ({row: model}, records: one per model with name, preset, steps (the best step), train_seconds,
    stopped_at, source ("cache" or "trained now") and path ("" if not saved))."""
    train, val = data["train"], data["val"]
    digest = run_digest(data) if cache else ""
    models, records = {}, []
    for label, (kind, _) in NOISE_ROWS.items():
        spec = Spec(kind=kind, data="fashion", recipe="noisy", dim=DIM, preset="paper", seed=seed)
        cfg = replace(spec.train_config(), steps=design.steps, weight_decay=design.weight_decay,
                      log_every=design.eval_every)
        row = "clean" if label == "clean subset only" else "noisy"
        name = f"amb49-{design.key}-{kind}-{row}-s{seed}"
        path = cached_model_path(name) if cache else None
        seed_everything(seed)
        model = spec.build()
        meta = _cached(path, model, design, digest) if cache else None
        source = "cache" if meta is not None else "trained now"
        if meta is None:
            if cache:  # a read-only or full store is refused before the training, not after
                check_writable(path, need=checkpoint_bytes(spec))
            keep = train["clean"] if row == "clean" else slice(None)
            info = fit_early_stopped(model, torch.from_numpy(train["images"][keep]),
                                     torch.from_numpy(train["labels"][keep]), cfg, val["images"], val["labels"],
                                     seed, design.patience, STOP_SCORES[design.stop_on if kind == "het" else "map"])
            meta = {"name": name, **info, "design": asdict(design), "row": label, "seed": seed, "kind": kind,
                    "data": digest}
            if cache:
                save_checkpoint(path, model, meta)
        models[label] = model
        records.append(SimpleNamespace(name=name, preset="paper", steps=int(meta["best_step"]) + 1,
                                       train_seconds=float(meta["seconds"]), stopped_at=int(meta["stopped_at"]),
                                       source=source, path=str(path or "")))
    return models, records


def cached_model_path(name: str) -> Path:
    """Where the zoo's store keeps the model ``name`` (`train_run`): ``<data root>/checkpoints/<name>.pt``, the
    folder of `hedgekit.zoo.store.cache_checkpoint_path` (``HEDGEKIT_DATA`` moves it)."""
    return cache_path("checkpoints", f"{name}.pt")


def run_digest(data: dict) -> str:
    """SHA-1 of a run's training and validation images and (noisy) labels: what its stored models were fit to."""
    h = hashlib.sha1()
    for part in ("train", "val"):
        for k in ("images", "labels"):
            h.update(np.ascontiguousarray(data[part][k]).tobytes())
    return h.hexdigest()


def _cached(path: Path, model, design: Design, digest: str) -> dict | None:
    """The meta of the stored model at ``path``, its weights loaded into ``model`` (eval mode), if `load_checkpoint`
    accepts the file and it was trained for ``design`` on the data of ``digest`` with ``model``'s network; None
    (with a warning saying why, the file is then replaced) otherwise, or if there is no file."""
    if not path.is_file():
        return None
    try:
        stored, meta = load_checkpoint(path)
    except CheckpointError as exc:
        warnings.warn(f"retraining: {exc}", stacklevel=3)
        return None
    wanted = {"another design": (meta.get("design"), asdict(design)), "other training data": (meta.get("data"), digest),
              "another network": (stored.config, model.config)}
    differ = [k for k, (a, b) in wanted.items() if json.dumps(a, sort_keys=True) != json.dumps(b, sort_keys=True)]
    if differ:
        warnings.warn(f"retraining: {path} was trained for {' and '.join(differ)}", stacklevel=3)
        return None
    model.load_state_dict(stored.state_dict())
    model.eval()
    return meta


# --------------------------------------------------------------------------- measurement
def measure(models: dict, seed: int, data: dict, design: Design, detect_images: int | None = 10_000) -> dict:
    """One run's numbers: `noise_study.measure_run` on the run's test set and (a fixed random ``detect_images``
    subset of) its training set, with the random-cleaning row replaced by the mean over ``design.permutations``
    random removals of the same gallery (their spread is ``random_sd``); plus ``blends_removed``
    (`blends_removed_map`) and `sigma_groups` of the training set."""
    train = data["train"]
    if detect_images is not None and detect_images < len(train["labels"]):
        keep = np.sort(np.random.default_rng([seed, 5]).permutation(len(train["labels"]))[:detect_images])
        train = {k: v[keep] for k, v in train.items()}
    test = data["test"]
    out = NS.measure_run(models, seed, test, {k: train[k] for k in ("images", "labels", "flipped", "ambiguous")})
    emb, u = P.embed(models[NS.HET], test["images"])
    labels = np.asarray(test["labels"])
    q, g = P.split(labels, seed)
    n = int(round(P.CLEANING_FRACTION * len(g)))  # map_after_removing_uncertain's random removals, one sort
    rand = maps_after_removals(emb[q], labels[q], emb[g], labels[g],
                               [np.random.default_rng([seed, 6, k]).permutation(len(g))[:n]
                                for k in range(design.permutations)])
    out["map"][NS.CLEANING_ROWS[0]] = float(np.mean(rand))
    out["random_sd"] = float(np.std(rand, ddof=1))
    out["blends_removed"] = blends_removed_map(emb, labels, test["ambiguous"], seed, design.permutations)
    _, u_t = P.embed(models[NS.HET], train["images"])
    out["sigma_groups"] = sigma_groups(u_t, train["flipped"], train["ambiguous"])
    return out


def blends_removed_map(emb, labels, ambiguous, seed: int, permutations: int = 20) -> float:
    """The cleaning an oracle could do: mAP after removing `protocol.CLEANING_FRACTION` of the gallery drawn at
    random among its blended items only (all of them if fewer), averaged over ``permutations`` draws."""
    labels, ambiguous = np.asarray(labels), np.asarray(ambiguous, bool)
    q, g = P.split(labels, seed)
    blends = np.flatnonzero(ambiguous[g])
    n = min(len(blends), int(round(P.CLEANING_FRACTION * len(g))))
    removals = [np.random.default_rng([seed, 7, k]).choice(blends, n, replace=False) for k in range(permutations)]
    return float(np.mean(maps_after_removals(emb[q], labels[q], emb[g], labels[g], removals)))


def maps_after_removals(query, query_labels, gallery, gallery_labels, removals, chunk: int = 1024) -> list[float]:
    """`metrics.mean_average_precision` of the queries against the gallery less each index array of
    ``removals``, from one ranking of the whole gallery: removing items from a stable ranking leaves the others
    in the order a ranking of the rest gives (ties by gallery order), so each removal costs a cumulative sum, not
    a sort (the random-cleaning row's 20 removals of one gallery took most of a run's time)."""
    q, g = torch.as_tensor(np.asarray(query), dtype=torch.float64), torch.as_tensor(np.asarray(gallery),
                                                                                  dtype=torch.float64)
    ql, gl = torch.as_tensor(np.asarray(query_labels)), torch.as_tensor(np.asarray(gallery_labels))
    keeps = []
    for r in removals:
        keep = torch.ones(len(gl), dtype=torch.float64)
        keep[torch.as_tensor(np.asarray(r, int))] = 0.0
        keeps.append(keep)
    aps = np.empty((len(keeps), len(q)))
    for i in range(0, len(q), chunk):
        order = torch.sort(torch.cdist(q[i:i + chunk], g), dim=1, stable=True).indices
        rel = (gl[order] == ql[i:i + chunk, None]).double()  # (q, G) relevance by rank
        for j, keep in enumerate(keeps):
            kept = keep[order]
            hit = rel * kept
            ranks = kept.cumsum(1)
            n_rel = hit.sum(1)
            ap = (hit * hit.cumsum(1) / ranks.clamp(min=1)).sum(1) / n_rel
            aps[j, i:i + chunk] = torch.where(n_rel > 0, ap, torch.full_like(ap, float("nan"))).numpy()
    if np.isnan(aps).all(axis=1).any():
        raise InputError("a removal leaves no query a relevant gallery item; mAP is undefined")
    return [float(np.nanmean(a)) for a in aps]


def sigma_groups(u, flipped, ambiguous) -> dict:
    """Median sigma^2 and count of each (ambiguous?, flipped?) group: "single, label right", "single, flipped",
    "blend, own label", "blend, partner's label" (empty groups left out)."""
    u, flipped, ambiguous = np.asarray(u), np.asarray(flipped, bool), np.asarray(ambiguous, bool)
    out = {}
    for name, m in _groups(flipped, ambiguous).items():
        if m.any():
            out[name] = {"median": float(np.median(u[m])), "n": int(m.sum())}
    return out


def _groups(flipped, ambiguous) -> dict:
    return {"single, label right": ~ambiguous & ~flipped, "single, flipped": ~ambiguous & flipped,
            "blend, own label": ambiguous & ~flipped, "blend, partner's label": ambiguous & flipped}


def sigma_figure(u, flipped, ambiguous):
    """sigma^2 against the truth: box plots (log scale) of the training images' sigma^2 in the four groups of
    `sigma_groups`; a flipped label or a blend is what sigma^2 should mark. Returns (fig, ax)."""
    u, flipped, ambiguous = np.asarray(u), np.asarray(flipped, bool), np.asarray(ambiguous, bool)
    groups = {k: u[m] for k, m in _groups(flipped, ambiguous).items() if m.any()}
    fig, ax = figure(figsize=(6.4, 3.4))
    ax.boxplot(list(groups.values()), showfliers=False)
    ax.set_xticks(range(1, len(groups) + 1), [f"{k}\n(n={len(v)})" for k, v in groups.items()], fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("σ² (training image)")
    ax.set_title("σ² against the truth: flipped or not, blended or not", fontsize=10)
    fig.tight_layout()
    return fig, ax


def run_study(seeds: Sequence[int] = range(5), design: Design = Design(), detect_images: int | None = 10_000,
              cache: bool = True, log=None) -> dict:
    """Train (or, with ``cache``, load from the zoo's store: `train_run`) and measure each seed's run; returns
    ``summary`` (`noise_study.summarise` plus ``random_sd`` and ``sigma_groups`` per run), ``verdict``
    (`claims.noise_verdict` under `TITLE`), ``rows`` (Table 2's rows, `noise_study.map_table`), ``pairs``
    (`noise_study.cleaning_pairs`), ``detection`` (`noise_study.detection_frame`), ``records`` (each model's early
    stop and source, `train_run`), ``figure``: `sigma_figure` of the first run, and ``design``. ``detect_images``:
    the training images of each run that flip detection reads (`measure`; None: all). ``log``: called with each
    run's line of progress (e.g. print)."""
    runs, records, fig = [], [], None
    for seed in seeds:
        data = run_data(seed, design)
        models, recs = train_run(seed, design, data, cache)
        run = measure(models, seed, data, design, detect_images)
        runs.append(run)
        records += recs
        if fig is None:
            _, u = P.embed(models[NS.HET], data["train"]["images"])
            fig = sigma_figure(u, data["train"]["flipped"], data["train"]["ambiguous"])[0]
        if log is not None:
            log(f"seed {seed}: " + ", ".join(f"{k} {100 * v:.2f}" for k, v in run["map"].items())
                + "; best steps " + ", ".join(str(r.steps) for r in recs))
    summary = {**NS.summarise(runs), "random_sd": Spread([r["random_sd"] for r in runs]),
               "blends_removed": Spread([r["blends_removed"] for r in runs]),
               "sigma_groups": [r["sigma_groups"] for r in runs]}
    return {"summary": summary, "verdict": noise_verdict(summary, records, TITLE), "rows": NS.map_table(summary),
            "pairs": NS.cleaning_pairs(summary), "detection": NS.detection_frame(summary), "records": records,
            "figure": fig, "design": design}


def _main(argv: Sequence[str] | None = None) -> None:
    import argparse
    import json

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--design", default="{}", help="JSON of `Design` fields to change")
    ap.add_argument("--detect-images", type=int, default=10_000)
    ap.add_argument("--cache", action=argparse.BooleanOptionalAction, default=True,
                    help="keep the trained models in the zoo's store (<data root>/checkpoints, HEDGEKIT_DATA) "
                         "and load them from it (default); --no-cache trains in memory only")
    a = ap.parse_args(argv)
    design = Design(**{k: tuple(v) if isinstance(v, list) else v for k, v in json.loads(a.design).items()})
    print(design, "key", design.key, flush=True)
    res = run_study(a.seeds, design, a.detect_images, a.cache, log=lambda s: print(s, flush=True))
    s = res["summary"]
    print(res["rows"].round(2).to_string())
    print(res["pairs"].round(2).to_string())
    print("random removal sd over permutations (points):", [round(100 * x, 3) for x in s["random_sd"].values])
    print("blends-only removal (oracle) mAP:", [round(100 * x, 2) for x in s["blends_removed"].values])
    for key in ("ambiguous_removed", "ambiguous_gallery", "noise_rate", "odd_top", "odd_rate"):
        print(f"{key}: {s[key][0]:.3f} ± {s[key][1]:.3f}  runs {[round(x, 3) for x in s[key].values]}")
    print("r(AP, sigma^2) per run:", [round(x, 3) for x in s["r"]])
    print(res["detection"].round(3).to_string())
    for g in s["sigma_groups"]:
        print("sigma^2 medians:", {k: (round(v["median"], 4), v["n"]) for k, v in g.items()})
    print("early stop (row: best step / stopped at):",
          [(r.name.split("-")[2] + "-" + r.name.split("-")[3], r.steps, r.stopped_at) for r in res["records"]])
    print(res["verdict"].markdown())


if __name__ == "__main__":
    _main()
