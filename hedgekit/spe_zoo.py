"""SPE experiments: named, load-or-train PN / SPE models and the measurements of notebooks 06-07.

Scott, Ridgeway & Mozer, "Stochastic Prototype Embeddings" (2019). A model is named by its
`SPESpec` (head, data, N, D, sampler, samples, recipe, preset, seed), e.g.

    spe-n2-d2-intersection1-paper-s0        SPE on 2-digit MNIST, D = 2 (Table 2, Figures 6-7)
    pn-n2-d2-paper-s0                        its deterministic sibling, the Prototypical Network
    spe-lshapes-d2-intersection8-paper-s0    SPE on the synthetic L-shapes (Figures 2-3)
    spe-n2-d2-naive9-fig4-fast-s0            a Figure 4 run: naive sampler, s = 9 samples per query

`load_or_train_spe` looks the name up with `hedgekit.zoo.find_checkpoint` (shipped checkpoints,
then ``cache_path("checkpoints")``), else trains with `hedgekit.episodic_train.fit_episodic` and
saves with `hedgekit.zoo.save_checkpoint` (config, seed, versions, history, quick metrics). The SPE
head's only parameter, gamma (sigma_eps^2 = softplus(gamma), App. B), is stored in the metadata.

Presets (`SPE_PRESETS`, the reason for each number beside it):

* ``fast``: CI and FAST notebooks. Every model trains in well under a minute on one busy core, so a
  FAST notebook, training included, stays under 3 minutes. Numbers are far from the paper's.
* ``paper``: as close to the paper as 2 CPU cores allow (minutes per model, not GPU-days); the
  N-digit recipe is `EpisodicConfig`'s default, the L-shape net is App. A.2's (64 filters).

The second half of the module holds the measurements behind the notebooks' figures, plain numpy in
and out so that each is tested against an oracle (``tests/test_spe_zoo.py``): the 5 x 5 grid
embedding of Figure 2c and its axis assignment, the per-axis variance sweeps of Figure 3, the
Table 2 episode grid, the digit-axis analysis of Figure 7, and a sigma_eps^2 fit that lets HIB's
Gaussian embeddings be evaluated with SPE's rule.
"""
from __future__ import annotations

import copy
import math
import time
from dataclasses import asdict, dataclass
from typing import Mapping, Sequence

import numpy as np
import torch

from . import zoo
from .data import load_ndigit, random_occlusion
from .data.lshapes import (LEG_LENGTH_RANGE, centroid_sweep, interpolation_grid, make_lshapes,
                           render_batch)
from .distributions import Embedding
from .episodes import EmbeddedSet, EpisodeSampler, embed_dataset, evaluate_episodes, images_to_tensor
from .episodic_train import EpisodicConfig, fit_episodic
from .errors import InputError
from .losses.prototypes import PN, SAMPLERS, SPE, SPE_INIT_VAR
from .models import EmbeddingNet, build_lshape_model, build_model
from .paths import cache_path
from .train import seed_everything

__all__ = [
    "SPE_PRESETS", "HEADS", "DATASETS", "RECIPES", "CONDITIONS", "SPESpec", "spe_spec_from_name", "notebook_specs",
    "train_spe",
    "load_or_train_spe", "load_spe_checkpoint", "session_model", "table2_settings", "table2_specs", "fig4_specs",
    "FIG4_SAMPLES", "FAST_FIG4_SAMPLES", "per_class_subset", "episode_grid", "fit_sigma_eps", "grid_embedding",
    "factor_axes", "ambiguity_peaks", "variance_sweep", "sweep_growth", "digit_axes", "unseen_placement",
    "class_prototypes", "heldout_accuracy", "ndigit_test_sets", "hib_spe_head", "evaluate_table2", "fig4_accuracy",
    "embed_factors", "copy_preset", "class_spacing", "accuracy_by_level",
]

HEADS = ("spe", "pn")
DATASETS = ("ndigit", "lshapes")
RECIPES = ("main", "fig4")
DEFAULT_SAMPLES = {"ndigit": 1, "lshapes": 8}  # sec. 4.2: SPE trained with s = 1; App. A.2: 8 samples per query

# (support, query) corruption conditions of Table 2 / Figure 6 (App. E), in the paper's order.
CONDITIONS = (("clean", "clean"), ("corrupt", "clean"), ("clean", "corrupt"))

SPE_PRESETS: dict[str, dict[str, dict]] = {
    "fast": {
        # 2-digit MNIST, Table 2 / Figures 6-7. 300 steps of 16 classes x (5 support + 5 query) = 160
        # images per step: measured 11-12 s per model on one quiet core (3-10x that on a busy shared machine).
        "ndigit": dict(steps=300, n_classes=16, k_support=5, query_per_class=5, lr=3e-3,
                       eval_episodes=20, eval_k=50),  # quick check saved with the model: 20 episodes, 50 support
        # Figure 4 analogue: few-shot training episodes like the paper's 1-shot 20-class task; 200 short
        # steps (120 images each): measured 6-8 s per run, ~30 s for the four FAST runs (2 samplers x s in {1, 9}).
        "ndigit_fig4": dict(steps=200, n_classes=20, k_support=1, query_per_class=5, lr=3e-3,
                            eval_episodes=20, eval_k=1),
        # L-shapes, Figures 2-3. App. A.2's net with 16 instead of 64 filters per block (~6x cheaper:
        # ~0.04-0.08 s per 40-image step instead of ~0.5 s); 600 steps of 4 classes x (2 support + 8 query)
        # on 4000 rendered training images (6 epochs): measured 23 s on a quiet core, ~84% held-out accuracy.
        "lshapes": dict(steps=600, channels=16, n_train=4000, n_test=2000, k_support=2, query_per_class=8,
                        lr=3e-3, eval_episodes=50, eval_query=25),  # quick check: 50 4-way episodes x 25 queries
    },
    "paper": {
        # EpisodicConfig's CPU recipe (3000 steps of 32 classes x 10 images, lr 3e-3 cosine). Measured for
        # N=2, D=2 on one quiet core: SPE 310 s, PN 229 s; 300 test episodes gave SPE 87.7 / 86.6 / 41.4 and
        # PN 80.7 / 52.9 / 37.7 (seen; clean, corrupt support, corrupt query; paper 93.0 / 92.4 / 53.7 and
        # 91.1 / 72.7 / 53.1). The paper used all 70 classes x 50 support per episode, early stopping, a GPU.
        "ndigit": dict(steps=3000, n_classes=32, k_support=5, query_per_class=5, lr=3e-3,
                       eval_episodes=100, eval_k=50),
        # Figure 4: 1500 steps per run (10 runs: 2 samplers x s in {1, 3, 9, 27, 81}); ~1-2 CPU-min each.
        "ndigit_fig4": dict(steps=1500, n_classes=20, k_support=1, query_per_class=5, lr=3e-3,
                            eval_episodes=200, eval_k=1),
        # App. A.2: 64 filters per block, 2 support per class, 8 samples per query. lr 1e-3 with a cosine
        # decay instead of 1e-4 + early stopping (we have ~2000 steps, not a validation-driven schedule);
        # 20k training images (the paper does not say how many). Measured 0.26 s per step on a quiet core
        # (400 steps in 105 s), so ~9 CPU-minutes.
        "lshapes": dict(steps=2000, channels=64, n_train=20000, n_test=4000, k_support=2, query_per_class=8,
                        lr=1e-3, eval_episodes=200, eval_query=25),
    },
}

FIG4_SAMPLES = (1, 3, 9, 27, 81)  # s of Figure 4
FAST_FIG4_SAMPLES = (1, 9)


# ============================================================================ names and specs
@dataclass(frozen=True)
class SPESpec:
    """Everything that identifies a trained prototype model (PN or SPE) of notebooks 06-07.

    Args:
        head: "spe" (Gaussian embeddings + SPE head) or "pn" (point embeddings + Prototypical Network).
        data: "ndigit" (N-digit MNIST, LeNet of App. A.3) or "lshapes" (App. A.2 conv net).
        n_digits: N for "ndigit" (ignored, and normalised to 2, for "lshapes").
        sampler, samples: SPE's training sampler and samples per query (None: 1 on N-digit MNIST,
            sec. 4.2; 8 on L-shapes, App. A.2). Normalised to ("none", 0) for PN.
        recipe: "main" (Table 2 / Figures 2, 3, 7) or "fig4" (few-shot episodes of the Figure 4 runs).
        steps: override the preset's number of training steps (the name then reads e.g. ``paper600``).
    """

    head: str = "spe"
    data: str = "ndigit"
    n_digits: int = 2
    dim: int = 2
    sampler: str = "intersection"
    samples: int | None = None
    recipe: str = "main"
    preset: str = "paper"
    seed: int = 0
    steps: int | None = None

    def __post_init__(self) -> None:
        if self.head not in HEADS:
            raise InputError(f"head must be one of {HEADS}; got {self.head!r}")
        if self.data not in DATASETS:
            raise InputError(f"data must be one of {DATASETS}; got {self.data!r}")
        if self.recipe not in RECIPES:
            raise InputError(f"recipe must be one of {RECIPES}; got {self.recipe!r}")
        if self.recipe == "fig4" and self.data != "ndigit":
            raise InputError("the Figure 4 recipe is defined for N-digit MNIST only")
        if self.preset not in SPE_PRESETS:
            raise InputError(f"unknown preset {self.preset!r}; choose one of {sorted(SPE_PRESETS)}")
        if self.dim < 1 or self.n_digits < 1 or self.seed < 0 or (self.steps is not None and self.steps < 1):
            raise InputError("dim and n_digits must be >= 1, seed >= 0 and steps (if given) >= 1")
        if self.data == "lshapes":
            object.__setattr__(self, "n_digits", 2)
        if self.head == "pn":
            object.__setattr__(self, "sampler", "none")
            object.__setattr__(self, "samples", 0)
            return
        if self.sampler not in SAMPLERS:
            raise InputError(f"sampler must be one of {SAMPLERS}; got {self.sampler!r}")
        if self.samples is None:
            object.__setattr__(self, "samples", DEFAULT_SAMPLES[self.data])
        if not isinstance(self.samples, int) or self.samples < 1:
            raise InputError(f"samples must be an integer >= 1; got {self.samples!r}")

    @property
    def name(self) -> str:
        parts = [self.head, "lshapes" if self.data == "lshapes" else f"n{self.n_digits}", f"d{self.dim}"]
        if self.head == "spe":
            parts.append(f"{self.sampler}{self.samples}")
        if self.recipe != "main":
            parts.append(self.recipe)
        parts.append(self.preset if self.steps is None else f"{self.preset}{self.steps}")
        parts.append(f"s{self.seed}")
        return "-".join(parts)

    @property
    def label(self) -> str:
        """Display name: 'PN', 'SPE', 'SPE (naive, s=9)'."""
        if self.head == "pn":
            return "PN"
        if self.recipe == "fig4" or self.samples != DEFAULT_SAMPLES[self.data] or self.sampler != "intersection":
            return f"SPE ({self.sampler}, s={self.samples})"
        return "SPE"

    @property
    def recipe_key(self) -> str:
        return self.data if self.recipe == "main" else f"{self.data}_{self.recipe}"

    def recipe_config(self) -> dict:
        """The preset's settings for this model's data set and recipe (``steps`` overridden if given)."""
        r = dict(SPE_PRESETS[self.preset][self.recipe_key])
        if self.steps is not None:
            r["steps"] = self.steps
        return r

    def episodic_config(self) -> EpisodicConfig:
        r = self.recipe_config()
        kw = dict(steps=r["steps"], n_classes=4 if self.data == "lshapes" else r["n_classes"],
                  k_support=r["k_support"], query_per_class=r["query_per_class"], lr=r["lr"],
                  log_every=max(1, min(50, r["steps"] // 20)))
        if self.head == "spe":
            kw.update(sampler=self.sampler, samples=self.samples)
        return EpisodicConfig(**kw)

    def build(self) -> EmbeddingNet:
        """The untrained network: App. A.3 LeNet (N-digit MNIST) or App. A.2 conv net (L-shapes)."""
        kind = "hib" if self.head == "spe" else "point"
        if self.data == "lshapes":
            return build_lshape_model(kind, self.dim, channels=self.recipe_config()["channels"],
                                      init_var=SPE_INIT_VAR)
        return build_model(kind, self.n_digits, self.dim, init_var=SPE_INIT_VAR)

    def build_head(self) -> SPE | PN:
        """A fresh head; SPE's gamma initialised by App. B for this recipe's training episodes."""
        if self.head == "pn":
            return PN()
        cfg = self.episodic_config()
        return SPE.for_episodes(cfg.n_classes, cfg.k_support, self.dim, train_sampler=self.sampler,
                                train_samples=self.samples)


def spe_spec_from_name(name: str) -> SPESpec:
    """Inverse of `SPESpec.name`."""
    parts = str(name).split("-")
    try:
        kw: dict = {"head": parts[0]}
        if parts[1] == "lshapes":
            kw["data"] = "lshapes"
        else:
            kw["data"], kw["n_digits"] = "ndigit", int(parts[1][1:])
            if parts[1][0] != "n":
                raise ValueError
        if parts[2][0] != "d":
            raise ValueError
        kw["dim"] = int(parts[2][1:])
        rest = parts[3:]
        if kw["head"] == "spe":
            sampler = rest[0].rstrip("0123456789")
            kw["sampler"], kw["samples"] = sampler, int(rest[0][len(sampler):])
            rest = rest[1:]
        if rest[0] in RECIPES:
            kw["recipe"] = rest[0]
            rest = rest[1:]
        preset = rest[0].rstrip("0123456789")
        kw["preset"] = preset
        if rest[0] != preset:
            kw["steps"] = int(rest[0][len(preset):])
        if len(rest) != 2 or rest[1][0] != "s":
            raise ValueError
        kw["seed"] = int(rest[1][1:])
        spec = SPESpec(**kw)
    except (IndexError, ValueError, TypeError) as exc:
        raise InputError(f"{name!r} is not an SPE model name like 'spe-n2-d2-intersection1-paper-s0'") from exc
    if spec.name != name:
        raise InputError(f"{name!r} is not a canonical SPE model name (did you mean {spec.name!r}?)")
    return spec


# ============================================================================ load or train
def _training_data(spec: SPESpec):
    """(images, labels, augment) of the training set of ``spec``."""
    r = spec.recipe_config()
    if spec.data == "lshapes":
        train = make_lshapes(r["n_train"], seed=spec.seed, train=True, cache=True)
        return torch.from_numpy(train.images), train.labels, None
    train = load_ndigit(spec.n_digits, "train")
    # App. E: every training digit occluded with probability 0.2 -- redrawn at every step.
    return torch.from_numpy(train.images), train.labels, random_occlusion(0.2)


def _quick_metrics(spec: SPESpec, model: EmbeddingNet, head) -> dict:
    """A cheap accuracy check stored with the checkpoint (not the notebooks' evaluation)."""
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


def _head_meta(head) -> dict:
    if isinstance(head, SPE):
        return {"kind": "spe", "gamma": float(head.gamma.detach()), "sigma_eps2": float(head.sigma_eps2.detach()),
                "dim": head.dim, "train_sampler": head.train_sampler, "train_samples": head.train_samples,
                "eval_sampler": head.eval_sampler, "eval_samples": head.eval_samples}
    return {"kind": "pn", "scale": float(getattr(head, "scale", 1.0))}


def _head_from_meta(info: Mapping) -> SPE | PN:
    if info.get("kind") == "pn":
        return PN(info.get("scale", 1.0))
    head = SPE(1, int(info["dim"]), train_sampler=info["train_sampler"], train_samples=int(info["train_samples"]),
               eval_sampler=info.get("eval_sampler", "naive"), eval_samples=int(info.get("eval_samples", 200)))
    with torch.no_grad():
        head.gamma.fill_(float(info["gamma"]))
    return head.eval()


def train_spe(spec: SPESpec, progress: bool = True, device: str = "cpu", callback=None):
    """Train the model ``spec`` names; returns (model, head, meta). Everything on CPU afterwards."""
    images, labels, augment = _training_data(spec)
    seed_everything(spec.seed)  # the initial weights too, so a name always means the same model
    model, head, cfg = spec.build(), spec.build_head(), spec.episodic_config()
    t0 = time.perf_counter()
    hist = fit_episodic(model, head, images, labels, cfg, seed=spec.seed, device=device, progress=progress,
                        augment=augment, callback=callback)
    model, head = model.cpu().eval(), head.cpu().eval()
    metrics = _quick_metrics(spec, model, head)
    meta = {"spec": asdict(spec), "name": spec.name, "train_config": asdict(cfg), "recipe": spec.recipe_config(),
            "seed": spec.seed, "head": _head_meta(head), "train_seconds": round(hist.seconds, 1),
            "total_seconds": round(time.perf_counter() - t0, 1), "metrics": metrics, "history": hist.rows,
            "versions": zoo.versions()}
    return model, head, meta


def load_spe_checkpoint(path, device: str = "cpu"):
    """(model, head, meta) from a checkpoint written by `load_or_train_spe`."""
    model, meta = zoo.load_checkpoint(path, device)
    if "head" not in meta:
        from .errors import CheckpointError

        raise CheckpointError(f"{path} has no prototype-head metadata (not an SPE/PN checkpoint); delete it to retrain")
    return model, _head_from_meta(meta["head"]).to(device), meta


def load_or_train_spe(spec: SPESpec, progress: bool = True, device: str = "cpu", retrain: bool = False,
                      save: bool = True, callback=None):
    """The model named by ``spec``: loaded if a checkpoint exists, else trained and cached.

    Returns (model, head, meta); ``meta["source"]`` says "shipped", "cache" or "trained now".
    """
    path = None if retrain else zoo.find_checkpoint(spec)
    if path is not None:
        model, head, meta = load_spe_checkpoint(path, device)
        meta = dict(meta, source="shipped" if path.parent == zoo.SHIPPED_DIR else "cache", path=str(path))
        return model, head, meta
    model, head, meta = train_spe(spec, progress=progress, device=device, callback=callback)
    out = None
    if save:
        out = zoo.save_checkpoint(cache_path("checkpoints", f"{spec.name}.pt"), model, meta)
    return model.to(device), head.to(device), dict(meta, source="trained now", path=str(out or ""))


def session_model(session, spec: SPESpec, progress: bool = True):
    """`load_or_train_spe` for a notebook: records the checkpoint in the `hedgekit.notebook.Session` header."""
    from pathlib import Path

    from .notebook import CheckpointRecord, file_hash
    from .paths import REPO_DIR

    model, head, meta = load_or_train_spe(spec, progress=progress)
    path = meta.get("path") or ""
    short = path
    if path and Path(path).resolve().is_relative_to(REPO_DIR):
        short = str(Path(path).resolve().relative_to(REPO_DIR))
    session.checkpoints.append(CheckpointRecord(
        spec.name, meta["source"], short, file_hash(path) if path else "—",
        spec.preset, int(meta.get("train_config", {}).get("steps", 0)), float(meta.get("train_seconds", 0.0))))
    return model, head, meta


# ============================================================================ experiment grids
def table2_settings(fast: bool) -> tuple[tuple[int, int], ...]:
    """(N, D) of Table 2: N in {2, 3} x D in {2, 3} in full mode, (2, 2) in FAST mode."""
    return ((2, 2),) if fast else ((2, 2), (2, 3), (3, 2), (3, 3))


def table2_specs(fast: bool, seed: int = 0) -> dict[tuple[int, int], dict[str, SPESpec]]:
    """(N, D) -> {"PN": spec, "SPE": spec} (SPE: intersection sampler, s = 1, sec. 4.2)."""
    p = "fast" if fast else "paper"
    return {(n, d): {"PN": SPESpec("pn", "ndigit", n, d, preset=p, seed=seed),
                     "SPE": SPESpec("spe", "ndigit", n, d, preset=p, seed=seed)}
            for n, d in table2_settings(fast)}


def fig4_specs(fast: bool, seed: int = 0) -> list[SPESpec]:
    """Figure 4 analogue: 2-digit MNIST, D = 2, naive and intersection sampler, s in {1, 3, 9, 27, 81}."""
    p = "fast" if fast else "paper"
    return [SPESpec("spe", "ndigit", 2, 2, sampler, s, recipe="fig4", preset=p, seed=seed)
            for sampler in ("naive", "intersection") for s in (FAST_FIG4_SAMPLES if fast else FIG4_SAMPLES)]


def notebook_specs(notebook: str, fast: bool, seed: int = 0) -> list:
    """Every model an SPE notebook loads: 06 its L-shape SPE; 07 PN, SPE and the HIB (MoG-1) and point
    models it evaluates the same way (`hedgekit.zoo.ModelSpec`) for each Table 2 setting, then the
    Figure 4 runs. Other notebooks: []. Used by ``python -m hedgekit reproduce --list-models``."""
    preset = "fast" if fast else "paper"
    if notebook.startswith("06"):
        return [SPESpec("spe", "lshapes", dim=2, preset=preset, seed=seed)]
    if not notebook.startswith("07"):
        return []
    out: list = []
    for (n, d), pair in table2_specs(fast, seed).items():
        out += [pair["PN"], pair["SPE"], zoo.ModelSpec(kind="hib", n_digits=n, dim=d, preset=preset, seed=seed),
                zoo.ModelSpec(kind="point", n_digits=n, dim=d, preset=preset, seed=seed)]
    return out + fig4_specs(fast, seed)


# ============================================================================ N-digit evaluation
def per_class_subset(dataset, per_class: int, seed: int = 0):
    """At most ``per_class`` random images of every class (keeps FAST evaluation cheap; `NDigitSet.subset`)."""
    labels = np.asarray(dataset.labels)
    rng = np.random.default_rng(seed)
    keep = [rng.permutation(np.flatnonzero(labels == c))[:per_class] for c in np.unique(labels)]
    return dataset.subset(np.sort(np.concatenate(keep)))


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
            from .losses.prototypes import pn_prototypes

            mu = pn_prototypes(embedded.mixture_mean(), y, len(ids))
            var = torch.zeros_like(mu)
    return ids, mu.numpy(), var.numpy()


def digit_axes(prototypes, class_ids, n_digits: int = 2) -> np.ndarray:
    """(D, n_digits) share of each embedding coordinate's variance explained by each digit position.

    eta^2 of a one-way ANOVA: for coordinate j and position p, the variance of the per-digit-value
    means of coordinate j (weighted by group size) over its total variance. Figure 7's "horizontal
    dimension represents the first digit ... vertical the second" is eta^2 ~ [[1, 0], [0, 1]].
    """
    from .hib_analysis import digit_at

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
    from .hib_analysis import digit_at

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
            embedded[key] = {split: embed_dataset(model, ds) for split, ds in sets.items()}
        for r in episode_grid(model, head if head is not None else PN(), embedded[key], n_episodes, k_support,
                              query_per_class, seed):
            rows.append(dict(method=label, N=n, D=d, split=r["split"], condition=names[(r["support"], r["query"])],
                             acc=r["acc"], se=r["se"], episodes=r["episodes"]))
    return rows


def fig4_accuracy(model, head, test, n_episodes: int = 1000, n_classes: int = 20, k_support: int = 1,
                  seed: int = 0) -> tuple[float, float]:
    """Figure 4's test: accuracy (%) and standard error of k-shot n-class episodes (naive, 200 samples)."""
    mean, std, accs = evaluate_episodes(model, head, test, n_episodes=n_episodes, n_classes=n_classes,
                                        k_support=k_support, query_per_class=5, seed=seed)
    return 100 * mean, 100 * std / math.sqrt(len(accs))


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
    es = test if isinstance(test, EmbeddedSet) else embed_dataset(model, test)
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


def copy_preset(preset: str = "fast") -> dict:
    """A deep copy of a preset (for tests and experiments that shrink it)."""
    return copy.deepcopy(SPE_PRESETS[preset])

