"""Recipes: which data and which trainer each spec uses, and the quick check a fresh model is saved with.

`TRAINERS` maps a spec's family to its trainer: pairs (point, HIB: `hedgekit.training.fit` on N-digit MNIST,
then HIB's Table 1 metrics), episodes (PN, SPE: `hedgekit.training.episodic` on N-digit MNIST or L-shapes, then
an episode accuracy, `episode_metrics`) and triplets (Taha et al.: `hedgekit.training.triplets` on the data of
`triplet_data`, then a query-by-example mAP, `hedgekit.evaluation.query_gallery`). Each builds its trainer's
config from the spec (`trainer_config`: the spec's values, e.g. HIB's KL weight beta, go from the spec into the
config here and nowhere else) and returns the model on the CPU, that config, the training history and what its
checkpoint records besides (`hedgekit.zoo.store.train_spec` adds the rest).
"""
from __future__ import annotations

import functools
from dataclasses import replace

import numpy as np
import torch

from hedgekit.data import load_ndigit, make_lshapes, random_occlusion
from hedgekit.data.fashion import load_fashion
from hedgekit.data.ndigit import per_class_subset
from hedgekit.data.subsets import (clean_posterior, clean_subset, long_tailed, lookalike_noise, overlay_lookalikes,
                                   uncertainty_noise)
from hedgekit.evaluation.episodes import evaluate_episodes
from hedgekit.methods.pn import PN
from hedgekit.methods.fast.spe import SPE
from hedgekit.nets import EmbeddingNet
from hedgekit.training.captured import capturable, fit_captured
from hedgekit.training.episodic import EpisodicConfig, fit_episodic
from hedgekit.training.fit import History, TrainConfig, fit, seed_everything
from hedgekit.training.triplets import TripletConfig, fit_triplets
from hedgekit.zoo.methods import METHODS
from hedgekit.zoo.specs import PRESETS, ModelSpec, TripletSpec


def eval_set(spec: ModelSpec):
    """The seen-class test images a pair-trained checkpoint's recorded metrics were computed on."""
    test = load_ndigit(spec.n_digits, "test_seen")
    n_eval = PRESETS[spec.preset][spec.recipe_key]["eval_images"]
    if n_eval is not None:
        test = test.subset(np.random.default_rng(0).permutation(len(test))[:n_eval])
    return test


def trainer_config(spec: ModelSpec, precision: str = "float32") -> TrainConfig | EpisodicConfig | TripletConfig:
    """The config ``spec``'s trainer runs with: the preset's recipe with the spec's own values
    (``spec.train_config()``; HIB's ``beta`` becomes `TrainConfig.beta`) in ``precision``, which says how to train,
    not what (`hedgekit.hardware.resolve_precision` resolved it)."""
    return replace(spec.train_config(), precision=precision)


def _train_pairs(spec: ModelSpec, precision: str, progress: bool, device: str,
                 callback) -> tuple[EmbeddingNet, TrainConfig, History, dict]:
    """Point / HIB (any pair-trained kind): `hedgekit.training.fit` with its record's step loss on N-digit MNIST
    (on a CUDA device, where it can, with the step captured as one CUDA graph: `hedgekit.training.captured.
    fit_captured`), then HIB's Table 1 metrics, measured on the training device
    (`hedgekit.evaluation.retrieval.table1_metrics`); the model is handed back on the CPU."""
    # scipy and scikit-learn (through the metrics): 2.4 s of a notebook's first cell, which imports this module
    from hedgekit.evaluation.retrieval import table1_metrics

    cfg = trainer_config(spec, precision)
    train = load_ndigit(spec.n_digits, "train")
    x, y = torch.from_numpy(train.images), torch.from_numpy(train.labels)
    seed_everything(spec.seed)  # the initial weights too: one name, one model
    model = spec.build()
    augment = random_occlusion(cfg.occlusion_p)
    loss = METHODS[spec.kind].loss  # the step loss of the spec's method record
    # on a GPU the step replayed from one CUDA graph: the same batches and schedule, 3-4x the eager step's speed
    if capturable(cfg, device, augment, loss):
        hist = fit_captured(model, x, y, cfg, seed=spec.seed, device=device, progress=progress, augment=augment,
                            callback=callback)
    else:
        hist = fit(model, x, y, cfg, seed=spec.seed, device=device, progress=progress, augment=augment,
                   callback=callback, loss=loss)
    test = eval_set(spec)
    metrics = table1_metrics(model.eval(), test, progress=progress)
    return model.cpu(), cfg, hist, {"metrics": metrics, "eval_images": len(test)}


def _train_episodes(spec: ModelSpec, precision: str, progress: bool, device: str,
                    callback) -> tuple[EmbeddingNet, EpisodicConfig, History, dict]:
    """PN / SPE: `hedgekit.training.episodic` on N-digit MNIST or L-shapes, then a quick episode check; the
    prototype head goes into the checkpoint's metadata (`head_meta`)."""
    cfg, r = trainer_config(spec, precision), spec.recipe_config()
    if spec.data == "lshapes":
        train = make_lshapes(r["n_train"], seed=spec.seed, train=True, cache=True)
        images, labels, augment = torch.from_numpy(train.images), train.labels, None
    else:
        train = load_ndigit(spec.n_digits, "train")
        # SPE App. E: every training digit occluded with probability 0.2, redrawn at every step.
        images, labels, augment = torch.from_numpy(train.images), train.labels, random_occlusion(0.2)
    seed_everything(spec.seed)  # the initial weights too, so a name always means the same model
    model, head = spec.build(), spec.build_head()
    hist = fit_episodic(model, head, images, labels, cfg, seed=spec.seed, device=device, progress=progress,
                        augment=augment, callback=callback)
    model, head = model.cpu().eval(), head.cpu().eval()
    return model, cfg, hist, {"metrics": episode_metrics(spec, model, head), "recipe": r, "head": head_meta(head)}


def episode_metrics(spec: ModelSpec, model: EmbeddingNet, head) -> dict:
    """A cheap accuracy check stored with a prototype checkpoint (not the notebooks' evaluation)."""
    r = spec.recipe_config()
    if spec.data == "lshapes":
        test = make_lshapes(r["n_test"], seed=spec.seed, train=False, cache=True)
        mean, std, _ = evaluate_episodes(model, head, test, n_episodes=r["eval_episodes"], n_classes=4,
                                         k_support=r["k_support"], query_per_class=r["eval_query"])
        return {"heldout_acc": mean, "heldout_std": std, "episodes": r["eval_episodes"], "k_support": r["k_support"]}
    # eval_k support + 5 queries per class is all an episode needs: embed no more test images than that
    test = per_class_subset(load_ndigit(spec.n_digits, "test_seen"), r["eval_k"] + 5, spec.seed)
    n_cls = len(np.unique(test.labels)) if spec.recipe == "main" else min(20, len(np.unique(test.labels)))
    mean, std, _ = evaluate_episodes(model, head, test, n_episodes=r["eval_episodes"], n_classes=n_cls,
                                     k_support=r["eval_k"], query_per_class=5)
    return {"seen_clean_acc": mean, "seen_clean_std": std, "episodes": r["eval_episodes"], "k_support": r["eval_k"],
            "n_classes": n_cls}


def triplet_data(spec: TripletSpec, split: str = "train") -> dict:
    """The data of a triplet model: {"images", "labels"} and, for Fashion-MNIST "noisy", ``true`` labels,
    ``flipped`` and ``clean`` masks; "longtail" keeps exponentially decaying class counts
    (`hedgekit.data.subsets`). ``split``: "train", or "test" (N-digit MNIST: the unseen classes).

    "ambnoisy" / "ambclean" (the image-dependent analogue of Clothing1M): train and test images carry an
    ``ambiguous`` mask (`hedgekit.data.subsets.overlay_lookalikes`, clean labels); the training labels flip by
    `hedgekit.data.subsets.uncertainty_noise` under `hedgekit.data.subsets.clean_posterior` (neither clean-subset
    nor ambiguous items flip); "ambclean" is the clean subset alone."""
    r = spec.recipe_config()
    if spec.data == "fashion" and spec.recipe.startswith("amb"):
        a = r["amb"]
        out = _ambiguous_fashion(split, a["ambiguous"], tuple(a["alpha"]), a["clean_fraction"], r["noise"],
                                 a["power"], r["noise_seed"])
        out = {k: v.copy() for k, v in out.items()}
        return {k: v[out["clean"]] for k, v in out.items()} if split == "train" and spec.recipe == "ambclean" else out
    if spec.data == "ndigit":
        ds = load_ndigit(spec.n_digits, "train" if split == "train" else "test_unseen")
        out = {"images": ds.images, "labels": ds.labels}
    else:
        ds = load_fashion("train" if split == "train" else "test")
        out = {"images": ds.images, "labels": ds.labels.copy()}
        if split == "train" and spec.recipe in ("noisy", "clean"):
            clean = clean_subset(len(ds.labels), r["clean_fraction"], r["noise_seed"])
            noisy = lookalike_noise(ds.labels, rate=r["noise"], seed=r["noise_seed"])
            labels = np.where(clean, ds.labels, noisy.labels)
            out = {"images": ds.images, "labels": labels, "true": ds.labels.copy(), "flipped": labels != ds.labels,
                   "clean": clean}
            if spec.recipe == "clean":
                out = {k: v[clean] for k, v in out.items()}
    if split == "train" and spec.recipe == "longtail":
        keep = long_tailed(out["labels"], seed=r.get("noise_seed", 0))
        out = {k: v[keep] for k, v in out.items()}
    return out


@functools.lru_cache(maxsize=2)
def _ambiguous_fashion(split: str, fraction: float, alpha: tuple, clean_fraction: float, noise: float, power: float,
                       seed: int) -> dict:
    """`triplet_data`'s "amb" Fashion-MNIST split (computed once per process: the classifier takes ~10 s)."""
    ds = load_fashion("train" if split == "train" else "test")
    amb = overlay_lookalikes(ds.images, ds.labels, fraction=fraction, alpha=alpha,
                             seed=seed if split == "train" else seed + 1)
    out = {"images": amb.images, "labels": ds.labels.copy(), "ambiguous": amb.ambiguous}
    if split != "train":
        return out
    clean = clean_subset(len(ds.labels), clean_fraction, seed)
    noisy = uncertainty_noise(ds.labels, clean_posterior(amb.images, ds.labels, seed=seed), rate=noise,
                              eligible=~clean & ~amb.ambiguous, power=power, seed=seed)
    return {**out, "labels": noisy.labels, "true": noisy.true, "flipped": noisy.flipped, "clean": clean}


def _train_triplets(spec: TripletSpec, precision: str, progress: bool, device: str,
                    callback) -> tuple[EmbeddingNet, TripletConfig, History, dict]:
    """Triplet / heteroscedastic triplet (Taha et al. 2019): `hedgekit.training.triplets`, then a quick mAP."""
    from hedgekit.evaluation.query_gallery import query_gallery_map  # scipy, scikit-learn: see _train_pairs

    cfg = trainer_config(spec, precision)
    data = triplet_data(spec)
    seed_everything(spec.seed)
    model = spec.build()
    hist = fit_triplets(model, torch.from_numpy(data["images"]), torch.from_numpy(np.asarray(data["labels"])),
                        cfg, seed=spec.seed, device=device, progress=progress, callback=callback)
    model = model.cpu().eval()
    test = triplet_data(spec, "test")
    metrics = query_gallery_map(model, test["images"], test["labels"], spec.recipe_config()["eval_images"])
    return model, cfg, hist, {"metrics": metrics}


# family -> trainer(spec, precision, progress, device, callback) -> (model, its trainer_config, History, checkpoint
# metadata)
TRAINERS = {"pairs": _train_pairs, "episodes": _train_episodes, "triplets": _train_triplets}


def head_meta(head: SPE | PN) -> dict:
    """The prototype head's parameters as checkpoint metadata (SPE's gamma is its only learned number)."""
    if isinstance(head, SPE):
        return {"kind": "spe", "gamma": float(head.gamma.detach()), "sigma_eps2": float(head.sigma_eps2.detach()),
                "dim": head.dim, "train_sampler": head.train_sampler, "train_samples": head.train_samples,
                "eval_sampler": head.eval_sampler, "eval_samples": head.eval_samples}
    return {"kind": "pn", "scale": float(getattr(head, "scale", 1.0))}
