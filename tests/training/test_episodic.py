"""Tests of hedgekit.training.episodic: the input checks of `fit_episodic` (its training is tested with the
prototype heads in tests/evaluation/test_episodes.py)."""
import pytest
import torch

from hedgekit.errors import InputError
from hedgekit.nets import build_model
from hedgekit.training.episodic import EpisodicConfig, fit_episodic


def test_fit_episodic_refuses_every_kind_of_bad_training_images(bad_images):
    """The episodic trainer checks its images like `fit` (numpy / lists are converted, so not refused)."""
    cfg = EpisodicConfig(steps=1, n_classes=2, k_support=1, query_per_class=1)
    for name, what, x, match in bad_images((1, 28, 28), n=4):
        if what == "type":
            continue
        with pytest.raises(InputError, match=match):
            fit_episodic(build_model("point", n_digits=1), None, x, torch.arange(len(x)) % 2, cfg, progress=False)


@pytest.mark.parametrize("field, value, match", [
    ("steps", 0, "EpisodicConfig.steps must be an integer >= 1"),
    ("n_classes", 1, "EpisodicConfig.n_classes must be an integer >= 2"),
    ("k_support", 2.0, "EpisodicConfig.k_support must be an integer >= 1"),
    ("query_per_class", True, "EpisodicConfig.query_per_class must be an integer >= 1"),
    ("samples", -1, "EpisodicConfig.samples must be an integer >= 1"),
    ("lr", float("nan"), "EpisodicConfig.lr must be a finite number"),
    ("warmup", 2.0, "EpisodicConfig.warmup must be <= 1"),
    ("sampler", "foo", "EpisodicConfig.sampler must be one of"),
    ("precision", "float16", "EpisodicConfig.precision must be one of"),
])
def test_episodic_config_names_the_bad_field(field, value, match):
    with pytest.raises(InputError, match=match):
        EpisodicConfig(**{field: value})
