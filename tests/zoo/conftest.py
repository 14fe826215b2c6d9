"""Fixtures of the zoo's tests. Nothing here touches the user's cache: HEDGEKIT_DATA points to tmp_path, the
shipped checkpoint folder (`hedgekit.zoo.store.SHIPPED_DIR`) to an empty tmp folder, and N-digit MNIST is replaced
by a tiny synthetic NDigitSet (fixed random 28 x 28 "glyphs" per digit value + noise), so load_or_train runs in
seconds without building the 100k-image split."""
import copy

import numpy as np
import pytest
import torch

import hedgekit.zoo as zoo
from hedgekit.data import NDigitSet, occlude, sample_digit_boxes
from hedgekit.data.ndigit import spelled_number
from hedgekit.nets import build_model
from hedgekit.zoo import recipes, store


TINY = dict(steps=25, classes_per_batch=5, per_class=4, eval_images=100)


def _shrink(preset):
    """The "fast" preset with every steps / batch / eval-size entry made tiny, whatever its nesting."""
    if isinstance(preset, dict):
        return {k: TINY[k] if k in TINY else _shrink(v) for k, v in preset.items()}
    return preset


@pytest.fixture
def sandbox(tiny_ndigit, tmp_path, monkeypatch):
    """Private cache, no shipped checkpoints, tiny preset, tiny synthetic data, and a training counter."""
    monkeypatch.setenv("HEDGEKIT_DATA", str(tmp_path / "cache"))
    monkeypatch.setattr(store, "SHIPPED_DIR", tmp_path / "shipped")
    monkeypatch.setitem(zoo.PRESETS, "fast", _shrink(copy.deepcopy(zoo.PRESETS["fast"])))
    sets = {split: tiny_ndigit(1, split, 300 if split == "train" else 150)
            for split in ("train", "test_seen", "test_unseen")}
    loads = []

    def fake_load_ndigit(n_digits, split, seed=0, mnist_root=None):
        assert n_digits == 1
        loads.append(split)
        return sets[split]

    monkeypatch.setattr(recipes, "load_ndigit", fake_load_ndigit)
    fits = []
    real_fit = recipes.fit

    def counting_fit(*args, **kwargs):
        fits.append(args[3])  # the TrainConfig
        return real_fit(*args, **kwargs)

    monkeypatch.setattr(recipes, "fit", counting_fit)
    return dict(root=tmp_path, fits=fits, loads=loads, sets=sets)


@pytest.fixture
def trained_like_model():
    torch.manual_seed(0)
    model = build_model("hib", n_digits=1, dim=3, components=2)
    with torch.no_grad():  # move every weight away from its initial value
        for p in model.parameters():
            p.add_(0.01 * torch.randn_like(p))
    return model


def tiny_one_digit(split: str, n_images: int, seed: int = 0) -> NDigitSet:
    """1-digit "MNIST": digit v is a fixed random glyph + noise (easy, separable); test sets fully occluded."""
    glyphs = (np.random.default_rng(1234).random((10, 28, 28)) > 0.75) * 200.0
    rng = np.random.default_rng([seed, len(split)])
    labels = rng.permutation(np.arange(n_images) % 10).astype(np.int64)
    digits = labels[:, None]
    img = np.clip(glyphs[labels] + rng.normal(0, 30, (n_images, 28, 28)), 0, 255).astype(np.uint8)
    boxes = sample_digit_boxes(rng, n_images, 1, 0.2 if split == "train" else 1.0)
    assert np.array_equal(spelled_number(digits), labels)
    return NDigitSet(img, occlude(img, boxes), labels, digits, boxes, 1, split)


@pytest.fixture
def proto_sandbox(tmp_path, monkeypatch):
    monkeypatch.setenv("HEDGEKIT_DATA", str(tmp_path / "cache"))
    monkeypatch.setattr(store, "SHIPPED_DIR", tmp_path / "shipped")
    tiny = copy.deepcopy(zoo.PRESETS["fast"])
    tiny["lshapes"].update(steps=3, channels=4, n_train=24, n_test=24, eval_episodes=2, k_support=2,
                           query_per_class=2, eval_query=2)
    tiny["ndigit"].update(steps=4, n_classes=4, k_support=2, query_per_class=2, eval_episodes=2, eval_k=2)
    monkeypatch.setitem(zoo.PRESETS, "fast", tiny)
    sets = {"train": tiny_one_digit("train", 200), "test_seen": tiny_one_digit("test_seen", 100)}
    monkeypatch.setattr(recipes, "load_ndigit", lambda n, split, seed=0: sets[split])
    fits = []
    real_fit = recipes.fit_episodic

    def counting_fit(*args, **kwargs):
        fits.append(args[4])  # the EpisodicConfig
        return real_fit(*args, **kwargs)

    monkeypatch.setattr(recipes, "fit_episodic", counting_fit)
    return fits


@pytest.fixture
def url_defined():
    """The URL benchmark; what a run is, `hedgekit.papers.url.recipe` (which registers itself with the store when
    imported: `hedgekit.zoo.url_runs.register_url_runs`), is re-exported by it."""
    from hedgekit.papers.url import benchmark

    return benchmark


@pytest.fixture
def url_store(url_defined, tmp_path, monkeypatch):
    """URL runs in tmp_path (`recipe.cache_root`), 70 classes without loading MNIST, and a trainer that fails:
    a test that needs training sets its own (on `hedgekit.papers.url.recipe`, where the store calls it)."""
    from hedgekit.papers.url import recipe

    monkeypatch.setattr(recipe, "cache_root", lambda: tmp_path / "url")
    monkeypatch.setattr(recipe, "_train_data", lambda: (None, None, np.arange(70)))

    def no_training(*args, **kwargs):
        raise AssertionError("a cached URL run was retrained")

    monkeypatch.setattr(recipe, "train_run", no_training)
    return url_defined
