"""Tests of hedgekit.opcount: dispatched ops and host synchronisations counted against hand counts."""
import pytest
import torch

from hedgekit.errors import InputError
from hedgekit.opcount import OpCounter, step_counts


def test_each_arithmetic_op_is_one_launch_and_views_are_none():
    x, y = torch.ones(4), torch.ones(4)
    with OpCounter() as c:
        z = x + y  # aten.add
        z = z * 2  # aten.mul
        z.view(2, 2).t()  # two views: no kernel
    assert c.ops["aten.add"] == 1 and c.ops["aten.mul"] == 1
    assert c.launches == 2 and sum(c.syncs.values()) == 0


@pytest.mark.parametrize("read", [
    lambda x: x.sum().item(),  # _local_scalar_dense
    lambda x: bool(x.sum() > 0),
    lambda x: x[x > 0],  # boolean-mask indexing: the output's size depends on the values
    lambda x: torch.nonzero(x),
    lambda x: x.masked_select(x > 0),
])
def test_reads_of_values_are_host_synchronisations(read):
    with OpCounter() as c:
        read(torch.arange(4.0))
    assert sum(c.syncs.values()) == 1


def test_integer_indexing_and_masked_arithmetic_wait_for_nothing():
    x = torch.arange(6.0)
    with OpCounter() as c:
        x[torch.tensor([0, 2])]
        torch.where(x > 2, x, 0).sum()
    assert sum(c.syncs.values()) == 0
    assert {"aten.index", "aten.gt", "aten.where", "aten.sum"} <= set(c.ops)


def test_the_optimisers_host_side_step_counter_is_not_a_synchronisation():
    w = torch.nn.Parameter(torch.ones(3))
    opt = torch.optim.Adam([w], foreach=False)
    w.sum().backward()
    with OpCounter() as c:
        opt.step()  # reads its CPU step counter with .item(): no device is waited for
    assert sum(c.syncs.values()) == 0 and c.launches > 0


def test_step_counts_cancel_the_set_up_and_divide_by_the_extra_steps():
    def run(steps):
        x = torch.zeros(3) + 1  # set-up: one add, in every run
        x.sum().item()  # a log read, once per run
        for _ in range(steps):
            x = x * 2 + 1  # two launches a step
    c = step_counts(run, short=2, long=5)
    assert c.launches == 2 and c.views == 0 and c.syncs == 0
    assert c.ops == {"aten.mul": 1, "aten.add": 1}


@pytest.mark.parametrize("short, long", [(0, 4), (4, 4), (5, 3), (1.5, 4)])
def test_step_counts_needs_two_increasing_run_lengths(short, long):
    with pytest.raises(InputError, match="short < long"):
        step_counts(lambda n: None, short, long)
