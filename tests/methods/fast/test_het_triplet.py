"""hedgekit.methods.fast.het_triplet against the plain page hedgekit.methods.het_triplet: the masked miners keep the
triplets the plain miners select, in their order, and the losses' launch-bound path (`as_launch_bound`: the step a
GPU runs, here on the CPU) gives the plain path's losses, stats and gradients, on random batches of the recipes'
P x K shapes (hedgekit/zoo/specs.py PRESETS) and of uneven classes."""
import pytest
import torch

from hedgekit.hardware import as_launch_bound
from hedgekit.methods import het_triplet
from hedgekit.methods.fast.het_triplet import batch_hard_masked, semi_hard_masked, weighted_mean
from hedgekit.methods.het_triplet import (SEMI_HARD_WINDOW, heteroscedastic_triplet_loss, pairwise_distances,
                                          triplet_batch_loss)
from hedgekit.methods.mining import batch_hard_triplets, semi_hard_triplets


def batch(seed: int, sizes: tuple, dim: int = 3):
    """Float32 embeddings (B, dim) of classes of the given sizes, shuffled; continuous, so no distance ties."""
    g = torch.Generator().manual_seed(seed)
    labels = torch.cat([torch.full((n,), c) for c, n in enumerate(sizes)])
    return torch.randn(len(labels), dim, generator=g), labels[torch.randperm(len(labels), generator=g)]


CASES = [(0, (4, 4, 4, 4), None), (1, (3, 3, 4, 2), 0.5), (2, (1, 3, 1, 4), None),  # two anchors alone in their class
         (3, (18,) * 4, None), (4, (1, 1, 5), 1.0), (7, (2, 9, 5), 0.2),
         (5, (4,) * 18, None), (6, (10,) * 10, None)]  # the recipes' P x K batches: N-digit 18 x 4, Fashion 10 x 10


@pytest.mark.parametrize("seed, sizes, margin", CASES)
def test_masked_miners_keep_the_selected_triplets_in_order(seed, sizes, margin):
    z, y = batch(seed, sizes)
    d = pairwise_distances(z)
    window = SEMI_HARD_WINDOW if margin is None else margin
    for masked, selected, candidates in [(batch_hard_masked(d, y), batch_hard_triplets(d, y), len(y)),  # anchors
                                         (semi_hard_masked(d, y, window), semi_hard_triplets(d, y, window),
                                          len(y) ** 2)]:  # (a, p) pairs
        (a, p, n), valid = masked
        assert len(a) == len(p) == len(n) == len(valid) == candidates
        assert all(torch.equal(x[valid], s) for x, s in zip((a, p, n), selected))
    assert int(batch_hard_masked(d, y)[1].sum()) == len(y) - sum(size == 1 for size in sizes)


@pytest.mark.parametrize("mining", ["batch_hard", "semi_hard"])  # semi-hard: every shipped triplet recipe's
@pytest.mark.parametrize("seed, sizes, margin", CASES)
def test_launch_bound_losses_equal_the_plain_losses_stats_and_gradients(mining, seed, sizes, margin):
    z, y = batch(seed, sizes)
    s = 0.3 * torch.randn(len(y), generator=torch.Generator().manual_seed(seed))
    results = []
    for launch_bound in (True, False):
        zz, ss = z.clone().requires_grad_(), s.clone().requires_grad_()
        with as_launch_bound() if launch_bound else torch.enable_grad():
            vanilla, stats = triplet_batch_loss(zz, y, mining=mining, margin=margin)
            het, het_stats = heteroscedastic_triplet_loss(zz, ss, y, mining=mining, margin=margin)
        assert isinstance(stats["triplets"], torch.Tensor if launch_bound else int)  # the path that ran
        (vanilla + het).backward()
        results.append((vanilla.detach(), het.detach(), *(torch.as_tensor(float(v)) for v in stats.values()),
                        het_stats["sigma2"], zz.grad, ss.grad))
    for fast_value, plain_value in zip(*results):  # equal to float rounding (float32)
        torch.testing.assert_close(fast_value, plain_value, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("mining", ["batch_hard", "semi_hard"])
def test_masked_mining_reads_no_value_on_the_host(mining):
    """No ``nonzero`` or boolean selection where a step is launch-bound: a GPU step never waits for the device
    (`hedgekit.opcount`); the input checks, which read values, are deferred in a training step as here
    (`hedgekit.checks.deferred_value_checks`)."""
    from hedgekit.checks import deferred_value_checks
    from hedgekit.opcount import OpCounter

    z, y = batch(0, (4,) * 6)
    z.requires_grad_()
    with OpCounter() as c, deferred_value_checks(), as_launch_bound():
        loss, stats = heteroscedastic_triplet_loss(z, torch.zeros(len(y)), y, mining=mining)
        loss.backward()
    assert sum(c.syncs.values()) == 0, c.syncs


def test_weighted_mean_is_the_mean_over_the_mined_and_zero_for_none():
    t = torch.tensor([1.0, 5.0, 2.0, 7.0])
    assert weighted_mean(t, torch.tensor([1.0, 0.0, 1.0, 0.0])) == 1.5
    assert weighted_mean(t, torch.zeros(4)) == 0
    z, y = batch(1, (1, 1, 1))  # no class has two images: no triplet to mine
    with as_launch_bound():
        loss, stats = triplet_batch_loss(z.requires_grad_(), y)
    loss.backward()  # 0, with a graph, as on the plain path
    assert loss == 0 and stats["triplets"] == 0 and torch.equal(z.grad, torch.zeros_like(z))


def test_the_plain_page_exports_the_masked_forms():
    assert het_triplet.batch_hard_masked is batch_hard_masked and het_triplet.semi_hard_masked is semi_hard_masked


def test_the_fast_module_works_imported_before_the_plain_page():
    """The plain page imports this module; this one imports the page's eq. 3-4 when a masked form is called, so either
    can be imported first. In a fresh interpreter: no other test's imports count."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    code = ("import torch\nfrom hedgekit.methods.fast.het_triplet import batch_hard_masked\n"
            "(a, p, n), valid = batch_hard_masked(torch.rand(4, 4), torch.tensor([0, 0, 1, 1]))\n"
            "print(valid.tolist())")
    root = Path(__file__).resolve().parents[3]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True,
                         env={**os.environ, "PYTHONPATH": str(root)}).stdout
    assert out.strip() == "[True, True, True, True]"
