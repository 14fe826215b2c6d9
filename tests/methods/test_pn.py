"""Tests of hedgekit.methods.pn: Prototypical Networks (Snell et al. 2017, eq. 1-2), hand-computed cases.

The SPE limit that gives back a PN is tested in tests/methods/test_spe.py.
"""
import inspect
import math

import pytest
import torch
import torch.nn.functional as F

from hedgekit.embedding import Embedding
from hedgekit.errors import InputError
from hedgekit.methods.pn import PN, pn_log_posterior, pn_prototypes

DT = torch.float64


def test_prototypes_and_posterior_by_hand():
    """Eq. 1: c_0 = mean((0, 0), (2, 0)) = (1, 0), c_1 = (0, 3). Eq. 2 for the query (1, 1): squared distances
    1 and 5, so p = softmax(-1, -5) = (1, e^-4) / (1 + e^-4); with scale 0.5: softmax(-0.5, -2.5)."""
    z = torch.tensor([[0.0, 0.0], [2.0, 0.0], [0.0, 3.0]], dtype=DT)
    protos = pn_prototypes(z, torch.tensor([0, 0, 1]))
    torch.testing.assert_close(protos, torch.tensor([[1.0, 0.0], [0.0, 3.0]], dtype=DT))
    query = torch.tensor([[1.0, 1.0]], dtype=DT)
    p1 = 1 / (1 + math.exp(-4))
    torch.testing.assert_close(pn_log_posterior(query, protos).exp(), torch.tensor([[p1, 1 - p1]], dtype=DT))
    p1 = 1 / (1 + math.exp(-2))
    torch.testing.assert_close(pn_log_posterior(query, protos, 0.5).exp(), torch.tensor([[p1, 1 - p1]], dtype=DT))


def test_head_uses_embedding_means_and_its_loss_is_the_cross_entropy():
    """A Gaussian embedding is classified by its mean; a 2-component mixture by its weighted mean."""
    support = Embedding.gaussian(torch.tensor([[0.0, 0.0], [2.0, 0.0], [0.0, 3.0]], dtype=DT),
                                 torch.full((3, 2), 5.0, dtype=DT))
    query = Embedding.mixture(torch.tensor([[[0.0, 2.0], [2.0, 0.0]]], dtype=DT), torch.ones(1, 2, 2, dtype=DT))
    head = PN(scale=0.5)
    log_p = head.log_posterior(query, support, torch.tensor([0, 0, 1]))
    p1 = 1 / (1 + math.exp(-2))  # the query's mean is (1, 1): as in the hand-computed case
    torch.testing.assert_close(log_p.exp(), torch.tensor([[p1, 1 - p1]], dtype=DT))
    loss = head.loss(query, torch.tensor([1]), support, torch.tensor([0, 0, 1]))
    assert loss.item() == pytest.approx(-math.log(1 - p1))
    torch.testing.assert_close(loss, F.nll_loss(log_p, torch.tensor([1])))


def test_head_takes_no_sampler_arguments():
    """A PN is deterministic: it takes no sampler, sample count or generator."""
    for method in (PN.log_posterior, PN.loss):
        assert not {"sampler", "n_samples", "generator"} & set(inspect.signature(method).parameters)


def test_input_errors():
    """An episode is checked where it enters, by the head (labels: `hedgekit.checks.check_episode_labels`) and the
    `Embedding` (values); `pn_prototypes` and `pn_log_posterior` only compute eq. 1 and 2."""
    z, pn = torch.randn(6, 2), PN()
    support, query = Embedding.point(z), Embedding.point(z[:3])
    with pytest.raises(InputError, match="at least one support item"):
        pn.log_posterior(query, support, torch.tensor([0, 0, 2, 2, 2, 0]))
    with pytest.raises(InputError, match="out of range"):
        pn.log_posterior(query, support, torch.tensor([0, 1, 2, 0, 1, 2]), n_classes=2)
    with pytest.raises(InputError, match="shape"):
        pn.log_posterior(query, support, torch.tensor([0, 1]))
    with pytest.raises(InputError, match="NaN"):
        Embedding.point(torch.full((2, 2), float("nan")))
    with pytest.raises(InputError, match="integers"):
        pn.log_posterior(query, support, torch.zeros(6))
    with pytest.raises(InputError, match="one dimension D; got 4 and 2"):
        pn.log_posterior(Embedding.point(torch.zeros(3, 4)), support, torch.arange(6))
    with pytest.raises(InputError, match="query label 7 is out of range"):
        pn.loss(query, torch.tensor([0, 7, 1]), support, torch.arange(6))
