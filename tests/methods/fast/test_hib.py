"""hedgekit.methods.fast.hib: the memory budget of the HIB loss's sample-pair distances, refused before anything is
allocated, at the sizes the two forms of eq. 5 hold. (The fast form of eq. 5 over all pairs of a batch,
`hedgekit.methods.all_pairs.all_pairs_nll`, is held to the plain page's form in tests/methods/test_all_pairs.py.)"""
import pytest

from hedgekit import checks
from hedgekit.errors import InputError
from hedgekit.methods import hib
from hedgekit.methods.fast.hib import check_pair_memory

BUDGET = 5 * 4 * 256**2  # bytes: five float32 pair matrices of 256 x 256 sample pairs


@pytest.fixture
def budget(monkeypatch):
    monkeypatch.setattr(checks, "memory_budget", lambda: BUDGET)


@pytest.mark.parametrize("images, k", [(32, 8), (64, 4), (256, 1)])
def test_all_pairs_of_a_batch_take_bk_squared_distances(budget, images, k):
    """(BK)^2 = 256^2 fits exactly; one image more does not."""
    check_pair_memory(images, k)
    with pytest.raises(InputError, match=rf"the HIB loss with K={k} on a batch of {images + 1} would take .* "
                                         r"more than the .* allowed.*smaller K \(the paper uses K = 8\)"):
        check_pair_memory(images + 1, k)


def test_explicit_pairs_take_b_k_squared_distances(budget):
    """B K^2 for B explicit pairs: 1024 pairs at K = 8 fit where a batch of 1024 all-pairs images would not."""
    check_pair_memory(1024, 8, all_pairs=False)
    with pytest.raises(InputError, match="K=8 on a batch of 1024"):
        check_pair_memory(1024, 8)
    with pytest.raises(InputError, match="K=8 on a batch of 1025"):
        check_pair_memory(1025, 8, all_pairs=False)


def test_the_plain_page_exports_the_check():
    """`hedgekit.training.fit.TrainConfig` imports it from `hedgekit.methods.hib`, beside `check_beta`."""
    assert hib.check_pair_memory is check_pair_memory
