"""The kit's six methods as records (`hedgekit.zoo.methods`): point, HIB, PN, SPE, triplet and the heteroscedastic
triplet (het), each registered once, here, when `hedgekit.zoo` is imported.

Each record gathers what the kit needs about its method: its spec type (`hedgekit.zoo.specs`), training family and
head; the pair-trained kinds' own recipes in each preset, the reason for each number beside it (the prototype and
triplet models train with their families' shared recipes, `hedgekit.zoo.specs`); the step loss `fit` calls
(`hedgekit.training.fit`); the flags of ``python -m hedgekit train`` that set its fields (shared flags, e.g.
``--samples`` for HIB's K and SPE's samples per query, are one `Flag`); the models the app offers and how long one
takes to train.
"""
from __future__ import annotations

from hedgekit.checks import count_arg, number_arg
from hedgekit.methods.fast.spe import SAMPLERS
from hedgekit.methods.hib import BETA
from hedgekit.nets.embedder import MAX_COMPONENTS
from hedgekit.training.fit import pair_loss, soft_pair_loss
from hedgekit.zoo.methods import Flag, MethodRecord, register_method
from hedgekit.zoo.specs import (DATASETS, INIT_VARS, LOSSES, RECIPES, HIBSpec, PNSpec, PointSpec, SPESpec,
                                TripletSpec)

# The flags of `train` / `evaluate` beyond those every kind takes (`hedgekit.cli`), shared where kinds share a field.
DATA = Flag("data", "the data set; point and hib models train on N-digit MNIST only", choices=DATASETS,
            help="pn / spe: ndigit or lshapes; triplet / het: ndigit or fashion (with a fashion recipe) "
                 "(default ndigit)")
RECIPE = Flag("recipe", "the training recipe; point and hib models have one", choices=RECIPES,
              help="pn / spe: main or fig4 (SPE's Figure 4 episodes, ndigit only); triplet / het: main, aug or "
                   "longtail on ndigit, noisy, clean, longtail, ambnoisy or ambclean on fashion (default main)")
SAMPLES = Flag("samples", "K, HIB's samples per input (eq. 5), or SPE's samples per query", type=count_arg(1),
               help="hib: K samples per input (eq. 5; default the preset's K, 4 in paper); spe: samples per query "
                    "(default 1 on ndigit, 8 on lshapes)")
COMPONENTS = Flag("components", "HIB's mixture components C; the other kinds have one component", aliases=("-c",),
                  type=count_arg(1, MAX_COMPONENTS, " (one linear branch each)"),
                  help="hib only: mixture components (default 1)")
BETA_FLAG = Flag("beta", "the weight of HIB's KL term (eq. 8); other kinds have no KL term", type=number_arg(0.0),
                 help=f"hib only: KL weight (default {BETA:g})")
LOSS = Flag("loss", "the soft (eq. 3) or hard (eq. 1) contrastive loss: the contrastive loss is for point models",
            choices=LOSSES, help="point only: soft (eq. 3) or hard (eq. 1) contrastive loss (default soft)")
MARGIN = Flag("margin", "M of the hard contrastive loss (eq. 1), for point models", type=number_arg(0.0),
              help="point with --loss hard: the margin M of eq. 1 (default 1)")
SAMPLER = Flag("sampler", "SPE's training sampler (sec. 4.2); only SPE samples", choices=SAMPLERS,
               help="spe only: the training sampler (default intersection)")
INIT_VAR = Flag("init_var", "where SPE's variances start: init_var='eps' is sigma_eps^2 of SPE App. B",
                choices=INIT_VARS, help="spe only: 'eps' starts the variances at sigma_eps^2 (App. B), as notebook "
                                        "07's N = 3, D = 3 SPE (default unit)")

# Seconds to train one model of a kind (or of a kind and recipe, "spe-lshapes", "spe-ndigit_fig4") at its preset's
# own steps and K, N = 2 digits, one torch thread, two models side by side on the 2-core AMD EPYC (`reproduce
# --train-missing --jobs 2`). `paper` rows from the CPU times docs/speed.md records ("Training notebooks 07's and
# 04's missing checkpoints on the 2-core CPU", session 31): HIB 18,000 steps at K = 8 2,127-2,173 s (N = 2, three
# processes on the two cores) and 2,850-3,387 s (N = 3, three to four), and the shipped K = 8 models 994 s (N = 2)
# and 1,258 s (N = 3) for 9,000 steps: ~0.0133 s per step and sample K at N = 2, so 480 s for the preset's 9,000
# steps at K = 4 (a step's cost grows with K: `hedgekit.interactive.models.expected_train_seconds`); PN 135-137 s
# for 3,000 steps (785-788 s for 12,000 at N = 3); SPE 291-299 s for 3,000 steps; SPE's Figure 4 recipe (1,500
# steps of 20 classes x 6 images) 29-33 s. Point 118-125 s per 3,000 steps (26 Nov 2026), triplet / het 19-41 s for
# 1,500 steps, SPE on L-shapes 2,575 s (2,000 steps, busy core). `fast`: hib 15-41 s, point 18-22 s, spe 8-23 s
# (Figure 4 recipe: 6-8 s, `hedgekit.zoo.specs.PRESETS`), triplet / het 2-5 s. Most shipped checkpoints record
# longer times (up to 4.8x): older, slower training code trained them.

register_method(MethodRecord(
    kind="point", family="pairs", head="point", spec_type=PointSpec, loss=pair_loss, flags={"--loss": LOSS,
                                                                                          "--margin": MARGIN},
    presets={
        # CI and FAST notebooks: seconds per model. 400 steps of 16 classes x 8 images learn a usable 2-digit
        # embedding (clearly above chance) in ~30 s; evaluation on 2000 test images.
        "fast": dict(steps=400, classes_per_batch=16, per_class=8, lr=3e-3, eval_images=2000),
        # HIB Table 1 fidelity: 32 classes x 8 images, all 32,640 pairs per step (HIB sec. 4.1: 500k steps x 128
        # pairs). Steps fit 10 CPU-minutes per model on 2 cores: 470 s on idle cores.
        "paper": dict(steps=12000, classes_per_batch=32, per_class=8, lr=3e-3, eval_images=None)},
    app_models={"point, D=2": dict(kind="point", components=1, dim=2)},
    train_seconds={"fast": {"point": 20}, "paper": {"point": 480}}))

register_method(MethodRecord(
    kind="hib", family="pairs", head="hib", spec_type=HIBSpec, loss=soft_pair_loss,
    flags={"--components": COMPONENTS, "--beta": BETA_FLAG, "--samples": SAMPLES},
    presets={
        # 300 steps of 16 classes x 8 images: ~30 s, as point's; the fast preset names no K (`TrainConfig`'s 8).
        "fast": dict(steps=300, classes_per_batch=16, per_class=8, lr=3e-3, eval_images=2000),
        # As point's, 385 s (MoG-1) on idle cores. HIB draws K = 4 samples per input instead of the paper's 8: a
        # step costs ~50 ms instead of 70-107 ms, so 9,000 steps fit where 5,000 did at K = 8, and the longer run
        # is what counts (docs/recipes.md). At D >= 3 K = 4 collapses MoG-1's variances; those notebook models ask
        # for K = 8 (`HIBSpec.samples`, `hedgekit.papers.hib.experiments.hib_k`).
        "paper": dict(steps=9000, k=4, classes_per_batch=32, per_class=8, lr=3e-3, eval_images=None)},
    app_models={
        "MoG-1 (HIB), D=2": dict(kind="hib", components=1, dim=2),
        "MoG-2, D=2": dict(kind="hib", components=2, dim=2),
        # the paper's K = 8 samples per input: with the `paper` preset's K = 4, MoG-1 at D = 3 gives every input one
        # variance and does not hedge (`hedgekit.papers.hib.experiments.hib_k`); the fast preset's K is 8 anyway
        "MoG-1 (HIB), D=3 (2D projection)": dict(kind="hib", components=1, dim=3, samples=8)},
    train_seconds={"fast": {"hib": 30}, "paper": {"hib": 480}}))

register_method(MethodRecord(
    kind="pn", family="episodes", head="point", spec_type=PNSpec, flags={"--data": DATA, "--recipe": RECIPE},
    train_seconds={"fast": {"pn": 20}, "paper": {"pn": 135}}))

register_method(MethodRecord(
    kind="spe", family="episodes", head="hib", spec_type=SPESpec,
    flags={"--data": DATA, "--recipe": RECIPE, "--sampler": SAMPLER, "--samples": SAMPLES, "--init-var": INIT_VAR},
    train_seconds={"fast": {"spe": 20, "spe-lshapes": 30, "spe-ndigit_fig4": 8},
                   "paper": {"spe": 290, "spe-lshapes": 2600, "spe-ndigit_fig4": 30}}))

for _kind in ("triplet", "het"):  # Taha et al.'s eq. 2 and eq. 11: one spec type, the loss by kind
    register_method(MethodRecord(
        kind=_kind, family="triplets", head="het", spec_type=TripletSpec, flags={"--data": DATA, "--recipe": RECIPE},
        train_seconds={"fast": {_kind: 5}, "paper": {_kind: 30}}))
