"""Seed sets: the seeds of one pair spec trained as one stacked model, each saved as its own checkpoint.

Every seeded claim needs at least 3 trained seeds, and a LeNet cannot fill a GPU alone: where a step is paid for by
its launches, ``reproduce --train-missing`` (`hedgekit.repro.pool`) trains the missing seeds of one spec together
with `hedgekit.training.seeds.fit_seeds`. A seed set is two or more specs that differ in their seed only and that
`fit_seeds` can train (`stackable`: point and MoG-1 HIB models, the soft loss on all pairs, float32). Each seed then
gets what the one-by-one path (`hedgekit.zoo.store.load_or_train`, recipe `hedgekit.zoo.recipes._train_pairs`) would
give it: its initial weights (`seed_everything(seed)`, then ``spec.build()``), its batches, occlusions and noise, its
Table 1 metrics on its evaluation set, and a checkpoint of the same name and metadata keys in the cache, plus
``meta["stacked"]``: how many seeds trained together, and which. ``train_seconds`` is the stacked run's time, the
same for every seed of the set.
"""
from __future__ import annotations

import time
from dataclasses import asdict, replace
from typing import Sequence

import torch

from hedgekit.checks import check_writable, resolve_device
from hedgekit.data import load_ndigit, random_occlusion
from hedgekit.errors import InputError
from hedgekit.nets import EmbeddingNet
from hedgekit.training.fit import seed_everything
from hedgekit.training.seeds import fit_seeds
from hedgekit.zoo.recipes import eval_set
from hedgekit.zoo.specs import ModelSpec
from hedgekit.zoo.store import (cache_checkpoint_path, checkpoint_bytes, data_record, data_source, save_checkpoint,
                                trained_on, versions)


def stackable(spec: ModelSpec) -> bool:
    """Whether `fit_seeds` trains ``spec``'s recipe: a point or single-Gaussian HIB model, soft loss, all pairs."""
    if spec.family != "pairs" or spec.components != 1:
        return False
    cfg = spec.train_config()
    return cfg.loss == "soft" and cfg.pairing == "all" and cfg.precision == "float32"


def seed_sets(specs: Sequence[ModelSpec]) -> list[list[ModelSpec]]:
    """``specs`` in jobs: the stackable specs that differ only in their seed together (in listing order, each set
    where its first seed is listed), every other spec, and a seed set of one, alone."""
    groups: dict = {}
    for spec in specs:
        key = _without_seed(spec) if stackable(spec) else spec.name
        groups.setdefault(key, []).append(spec)
    return list(groups.values())


def train_seed_set(specs: Sequence[ModelSpec], device: str = "cpu",
                   progress: bool = False) -> list[tuple[EmbeddingNet, dict]]:
    """Train the seed set ``specs`` as one stacked model on ``device`` and save each seed as `load_or_train` saves
    it (module docstring); returns (model, meta) per spec, models on ``device``, ``meta["source"]`` "trained now"."""
    # scipy and scikit-learn (through the metrics): 2.4 s of a notebook's first cell, which imports this module
    from hedgekit.evaluation.retrieval import table1_metrics

    if len(specs) < 2 or any(not stackable(s) for s in specs) or len(set(map(_without_seed, specs))) != 1:
        raise InputError(f"a seed set is two or more stackable specs that differ in their seed only; got "
                         f"{[s.name for s in specs]}")
    t0, dev, first = time.perf_counter(), resolve_device(device), specs[0]
    paths = [cache_checkpoint_path(spec, data_source(spec)) for spec in specs]
    for path, spec in zip(paths, specs):  # a read-only or full cache is refused before training
        check_writable(path, need=checkpoint_bytes(spec))
    cfg = first.train_config()
    train = load_ndigit(first.n_digits, "train")
    models = []
    for spec in specs:
        seed_everything(spec.seed)  # the initial weights of the one-by-one path
        models.append(spec.build())
    hists = fit_seeds(models, [s.seed for s in specs], torch.from_numpy(train.images), torch.from_numpy(train.labels),
                      cfg, device=dev, augment=random_occlusion(cfg.occlusion_p), progress=progress)
    out = []
    for spec, model, hist, path in zip(specs, models, hists, paths):
        test = eval_set(spec)
        meta = {"spec": asdict(spec), "name": spec.name, "train_config": asdict(cfg), **trained_on(dev),
                "seed": spec.seed, "train_seconds": round(hist.seconds, 1),
                "total_seconds": round(time.perf_counter() - t0, 1),
                "metrics": table1_metrics(model.eval(), test, progress=progress), "eval_images": len(test),
                "history": hist.rows, "versions": versions(), "data": data_record(spec),
                "stacked": {"seeds": len(specs), "names": [s.name for s in specs]}}
        save_checkpoint(path, model.cpu(), meta)
        out.append((model.to(dev), dict(meta, source="trained now", path=str(path))))
    return out


def _without_seed(spec: ModelSpec) -> ModelSpec:
    return replace(spec, seed=0)
