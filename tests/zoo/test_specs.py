"""Tests of hedgekit.zoo.specs: each kind's spec type, its checks, presets and the networks it builds."""
import math

import pytest

import hedgekit.zoo as zoo
from hedgekit.errors import InputError
from hedgekit.methods.pn import PN
from hedgekit.zoo import Spec

pytestmark = pytest.mark.filterwarnings("ignore:Converting a tensor with requires_grad=True to a scalar")


def test_each_kind_has_its_own_spec_type_with_only_its_fields():
    from dataclasses import fields

    own = {kind: {f.name for f in fields(cls)} - {"kind", "data", "n_digits", "dim", "preset", "seed", "steps"}
           for kind, cls in ((kind, record.spec_type) for kind, record in zoo.METHODS.items())}
    assert own == {"point": {"loss", "margin"}, "hib": {"components", "beta", "samples"}, "pn": {"recipe"},
                   "spe": {"recipe", "sampler", "samples", "init_var"}, "triplet": {"recipe"}, "het": {"recipe"}}
    assert type(Spec(kind="hib", components=2)) is zoo.HIBSpec and Spec(kind="spe").family == "episodes"
    assert Spec(kind="point").components == 1 == Spec(kind="het").components  # read by every net config
    with pytest.raises(InputError, match="HIBSpec names hib models"):
        zoo.HIBSpec(kind="spe")
    with pytest.raises(InputError, match="SPESpec needs samples per query"):
        zoo.SPESpec()  # the data set's default is filled by Spec(...)
    with pytest.raises(InputError, match="write samples=None"):
        zoo.HIBSpec(samples=Spec().preset_k)  # the preset's own K has one spelling
    with pytest.raises(AttributeError):
        Spec(kind="pn").beta  # noqa: B018 (PN has no KL weight)


def test_hib_samples_are_k_of_eq5_defaulting_to_the_presets_and_named_only_when_they_differ():
    from hedgekit.training.fit import TrainConfig
    from hedgekit.zoo import PRESETS

    paper_k = PRESETS["paper"]["hib"]["k"]
    assert Spec(samples=paper_k) == Spec() and Spec().samples is None  # one model, one name
    assert Spec().train_config().k == paper_k and Spec(samples=8).train_config().k == 8
    assert Spec(preset="fast").train_config().k == TrainConfig.k  # the fast preset names no K: the trainer's
    assert Spec(samples=TrainConfig.k, preset="fast") == Spec(preset="fast")
    with pytest.raises(InputError, match="Spec.samples does not apply to point models"):
        Spec(kind="point", samples=8)  # K means nothing for point models: refused, not ignored
    for bad in (0, -1, 2.0, True, "8"):
        with pytest.raises(InputError, match="samples per input"):
            Spec(samples=bad)


def test_at_preset_keeps_an_own_k_and_lets_the_presets_k_follow_the_preset():
    assert Spec().at_preset("fast") == Spec(preset="fast")
    assert Spec(samples=8, dim=3).at_preset("fast").name == "hib-n2-d3-c1-beta0.0001-fast-s0"  # fast's K is 8
    assert Spec(samples=2).at_preset("fast", steps=30).name == "hib-n2-d2-c1-beta0.0001-k2-fast30-s0"
    assert Spec(kind="spe", samples=9).at_preset("fast").samples == 9
    assert Spec(kind="point", steps=100).at_preset("fast") == Spec(kind="point", preset="fast")


def test_labels():
    assert Spec(kind="point").label == "point"
    assert Spec(components=2).label == "MoG-2"


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(preset="slow"), "unknown preset"),
        (dict(kind="point", components=2), "does not apply to point models .*one component"),
        (dict(kind="hib", loss="hard"), "Spec.loss does not apply to hib models .*contrastive loss is for point"),
        (dict(kind="point", margin=0.5), "with loss='soft' leave it out"),
    ],
)
def test_model_spec_validation(kwargs, match):
    with pytest.raises(InputError, match=match):
        Spec(**kwargs)


def test_train_config_from_spec():
    cfg = Spec(kind="point", preset="fast", steps=10).train_config()
    assert cfg.steps == 10 and cfg.beta == 0.0 and cfg.loss == "soft"
    cfg = Spec(beta=1e-6, steps=77).train_config()
    assert cfg.beta == 1e-6 and cfg.steps == 77 and cfg.loss == "soft"
    cfg = Spec(kind="point", loss="hard", margin=0.7).train_config()
    assert cfg.loss == "hard" and cfg.margin == 0.7 and cfg.beta == 0.0
    m = Spec(n_digits=3, dim=3, components=2).build()
    assert m.config["width"] == 84 and m.config["components"] == 2


def test_paper_preset_recipes():
    hib, point = Spec(kind="hib").train_config(), Spec(kind="point").train_config()
    assert (hib.steps, hib.k, hib.beta) == (9000, 4, 1e-4)  # K = 4 affords 9,000 steps (zoo.PRESETS comment)
    assert (point.steps, point.beta) == (12000, 0.0)
    assert Spec(kind="hib", steps=100).train_config().k == 4  # a steps override keeps the preset's K
    assert Spec(kind="hib", preset="fast").train_config().k == 8


def test_spe_variances_start_at_sigma_eps2_with_init_var_eps():
    """App. B: sigma_eps^2 = softplus(|S| gamma0^(2/d)), |S| = 32 x 5 support images of the paper preset's episodes."""
    import math

    import torch.nn.functional as F

    from hedgekit.nets import INIT_VAR

    spec = Spec(kind="spe", n_digits=3, dim=3, steps=12000, init_var="eps")
    assert spec.name == "spe-n3-d3-intersection1-veps-paper12000-s0"
    want = math.log1p(math.exp(160 * 0.01 ** (2 / 3)))  # 7.43
    assert spec.initial_variance == pytest.approx(want) and want == pytest.approx(7.427, abs=1e-3)
    assert Spec(kind="spe", init_var="eps").initial_variance == pytest.approx(math.log1p(math.exp(160 * 0.01)))
    assert spec.initial_variance == pytest.approx(float(spec.build_head().sigma_eps2))  # the head's own start
    model = spec.build()
    assert model.config["init_var"] == spec.initial_variance == spec.net_config()["init_var"]
    assert F.softplus(model.head.branches[0].bias[3:]).tolist() == pytest.approx([want] * 3, rel=1e-5)
    unit = Spec(kind="spe", n_digits=3, dim=3, steps=12000)
    assert unit.initial_variance == INIT_VAR and unit.build().config["init_var"] == INIT_VAR
    assert unit.name == "spe-n3-d3-intersection1-paper12000-s0"  # the default keeps every existing name
    for kind in ("pn", "hib", "point", "het"):
        with pytest.raises(InputError, match="init_var='eps'"):
            Spec(kind=kind, init_var="eps")
    with pytest.raises(InputError, match="init_var must be one of"):
        Spec(kind="spe", init_var="tiny")


def test_prototype_bad_specs_raise():
    with pytest.raises(InputError, match="kind"):
        Spec(kind="nosuch")
    with pytest.raises(InputError, match="Figure 4"):
        Spec(kind="spe", data="lshapes", recipe="fig4")
    with pytest.raises(InputError, match="preset"):
        Spec(preset="huge")
    with pytest.raises(InputError, match="sampler"):
        Spec(kind="spe", sampler="gibbs")
    with pytest.raises(InputError, match="samples"):
        Spec(kind="spe", samples=0)
    with pytest.raises(InputError, match="N-digit MNIST"):
        Spec(kind="hib", data="lshapes")
    with pytest.raises(InputError, match="one component"):
        Spec(kind="spe", components=2)
    for field, value in (("dim", 0), ("n_digits", 1.5), ("seed", -1), ("steps", 0), ("components", True)):
        with pytest.raises(InputError, match=f"Spec.{field} must be an integer"):
            Spec(**{field: value})
    for kind, field, value in (("hib", "beta", float("inf")), ("hib", "beta", -1e-4), ("point", "margin", 0.0),
                               ("point", "loss", "vib")):
        with pytest.raises(InputError, match=f"Spec.{field} must be"):
            Spec(kind=kind, **{field: value})


def test_specs_build_the_papers_networks_and_heads():
    spe = Spec(kind="spe", data="ndigit", n_digits=2, dim=3, preset="fast")
    model, head = spe.build(), spe.build_head()
    assert model.config["kind"] == "hib" and model.config["dim"] == 3 and model.config["width"] == 56
    assert model.config["init_var"] == 1.0  # INIT_VAR: variances start near sigma_eps^2
    cfg = spe.train_config()
    # App. B: gamma = |S| gamma0^(2/d) with |S| the support examples of a training episode
    assert float(head.gamma) == pytest.approx(cfg.n_classes * cfg.k_support * 0.01 ** (2 / 3))
    assert (head.train_sampler, head.train_samples, head.eval_sampler, head.eval_samples) == ("intersection", 1, "naive", 200)
    ls = Spec(kind="spe", data="lshapes", preset="paper")
    assert ls.build().config["channels"] == 64 and ls.train_config().n_classes == 4  # App. A.2
    assert ls.train_config().k_support == 2 and ls.build_head().train_samples == 8
    assert isinstance(Spec(kind="pn").build_head(), PN) and Spec(kind="pn").build().config["kind"] == "point"


def test_triplet_specs_and_configs():
    het = Spec(kind="het", data="fashion", dim=8, recipe="noisy")
    assert het.name == "het-fashion-d8-noisy-paper-s0" and het.n_digits == 1 and het.label == "triplet + hetero"
    cfg = het.train_config()
    assert cfg.heteroscedastic and cfg.mining == "semi_hard" and (cfg.P, cfg.K) == (10, 10) and cfg.occlusion_p == 0
    duke = Spec(kind="triplet", dim=8, recipe="aug").train_config()
    assert not duke.heteroscedastic and (duke.P, duke.K) == (18, 4) and duke.occlusion_p == 0.2  # sec. 5.1
    assert Spec(kind="triplet", dim=8).train_config().occlusion_p == 0.0
    assert het.net_config()["kind"] == "het" and het.net_config()["width"] == 28
    for bad, match in ((dict(kind="het", recipe="noisy"), "recipes"),
                       (dict(kind="het", data="lshapes"), "het models train on N-digit MNIST or Fashion-MNIST"),
                       (dict(kind="het", data="fashion", n_digits=3), "n_digits applies to N-digit MNIST only"),
                       (dict(kind="hib", data="fashion"), "hib models train on N-digit MNIST"),
                       (dict(kind="spe", recipe="aug"), "main \\(or fig4\\) recipe")):
        with pytest.raises(InputError, match=match):
            Spec(**bad)
