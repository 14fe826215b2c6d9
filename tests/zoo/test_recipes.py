"""Tests of hedgekit.zoo.recipes: the data and trainer of each family, trained for real on tiny data
(tests/zoo/conftest.py)."""
import re

import numpy as np
import pytest
import torch

import hedgekit.zoo as zoo
from hedgekit.zoo import Spec, load_or_train

pytestmark = pytest.mark.filterwarnings("ignore:Converting a tensor with requires_grad=True to a scalar")


def test_training_is_deterministic_for_a_name(proto_sandbox):
    """Same spec, same seed -> bit-identical weights and sigma_eps^2 (the initial weights are seeded too)."""
    spec = Spec(kind="spe", data="ndigit", n_digits=1, preset="fast")
    (m1, meta1), (m2, meta2) = zoo.train_spec(spec, progress=False), zoo.train_spec(spec, progress=False)
    h1, h2 = zoo.prototype_head(meta1), zoo.prototype_head(meta2)
    assert all(torch.equal(a, b) for a, b in zip(m1.state_dict().values(), m2.state_dict().values()))
    assert torch.equal(h1.gamma, h2.gamma)
    m3, _ = zoo.train_spec(Spec(kind="spe", data="ndigit", n_digits=1, preset="fast", seed=1), progress=False)
    assert not torch.equal(m1.state_dict()["head.branches.0.weight"], m3.state_dict()["head.branches.0.weight"])


def test_triplet_data_noisy_and_clean_fashion(monkeypatch):
    """The noisy recipe keeps the verified-clean subset's labels, flips ~38% of all labels between look-alikes,
    and records the truth; the clean recipe is exactly the clean subset."""
    from types import SimpleNamespace

    from hedgekit.zoo import recipes

    rng = np.random.default_rng(0)
    fake = SimpleNamespace(images=rng.integers(0, 255, (4000, 28, 28), dtype=np.uint8), labels=np.arange(4000) % 10)
    monkeypatch.setattr(recipes, "load_fashion", lambda split="train": fake)
    noisy = zoo.triplet_data(Spec(kind="het", data="fashion", dim=8, recipe="noisy"))
    assert noisy["flipped"].mean() == pytest.approx(0.95 * 0.38, abs=0.03)
    assert not noisy["flipped"][noisy["clean"]].any() and noisy["clean"].mean() == pytest.approx(0.05)
    assert np.array_equal(noisy["labels"] != noisy["true"], noisy["flipped"])
    assert set(np.unique(noisy["labels"][noisy["flipped"] & (noisy["true"] == 1)])) == set()  # trousers never flip
    clean = zoo.triplet_data(Spec(kind="het", data="fashion", dim=8, recipe="clean"))
    assert len(clean["labels"]) == noisy["clean"].sum() and not clean["flipped"].any()


def test_triplet_model_trains_once_then_loads(sandbox, monkeypatch):
    spec = Spec(kind="het", n_digits=1, dim=4, preset="fast", seed=2)
    monkeypatch.setitem(zoo.PRESETS["fast"], "triplets_ndigit",
                        dict(steps=6, P=4, K=3, lr=1e-3, mining="batch_hard", eval_images=100))
    model, meta = load_or_train(spec, progress=False)
    assert meta["source"] == "trained now" and 0 <= meta["metrics"]["map"] <= 1
    assert meta["train_config"]["heteroscedastic"] and meta["train_config"]["steps"] == 6
    again, meta2 = load_or_train(spec, progress=False)
    assert meta2["source"] == "cache"
    x = torch.rand(3, 1, 28, 28)
    torch.testing.assert_close(model.embed(x).var, again.embed(x).var)


def test_training_a_zoo_model_shows_progress_for_training_and_evaluation(sandbox, capsys):
    """Notebooks training FAST models must show a sign of life: a tqdm bar for the steps, then one for
    the Table 1 evaluation (about a third of a FAST model's time); nothing with progress=False."""
    spec = Spec(kind="hib", n_digits=1, dim=2, preset="fast", seed=3)
    load_or_train(spec, progress=True, save=False)
    err = capsys.readouterr().err
    assert "train hib" in err and re.search(r"evaluate \(\d+ images\): embed", err) and "KNN corrupt" in err
    load_or_train(spec, progress=False, save=False)
    assert capsys.readouterr().err == ""


def test_beta_goes_from_the_spec_through_the_recipe_to_the_loss(sandbox, monkeypatch):
    """Steps 3-6 of the beta walk (docs/extending.md): the spec's beta reaches the config the recipe
    builds (the one `fit` gets), every step's `hib_batch_loss`, and the checkpoint's train_config, unchanged."""
    import hedgekit.training.fit as fit

    seen, real = [], fit.hib_batch_loss

    def spy(emb, labels, match, k, beta, generator):
        seen.append(beta)
        return real(emb, labels, match, k, beta, generator)

    monkeypatch.setattr(fit, "hib_batch_loss", spy)
    _, meta = zoo.train_spec(Spec(kind="hib", n_digits=1, beta=0.003, preset="fast", steps=3), progress=False)
    assert [cfg.beta for cfg in sandbox["fits"]] == [0.003] and seen == [0.003] * 3
    assert meta["train_config"]["beta"] == 0.003 and meta["spec"]["beta"] == 0.003
