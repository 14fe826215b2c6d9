"""Tests of hedgekit.training.distributed: two gloo processes train like one process with the same global batch.

The oracle is the single-process run: under torch.distributed every rank draws the same global
batch, embeds half of it and computes the loss of the whole gathered batch, so the loss curve must
equal the single-process curve up to float rounding (smaller convolution batches, gradients summed
in another order; the step-0 gradients agree to ~1e-7). Tolerance on every logged loss of 8 steps:
1e-4 relative (measured: <= 1.2e-6). The hard contrastive loss gets 1e-4 on its first loss and 2e-2
on the rest (measured: 4.2e-3; 1.02e-2 on an AMD EPYC machine whose kernels round differently):
Adam divides each gradient coordinate by its own running scale, so coordinates whose gradient is
~1e-8 (e.g. the head's bias: distances do not change when every embedding moves alike) take steps
of about lr in directions set by rounding, and the hinge's kinks let them change the loss slightly.
The heteroscedastic triplet run gets 1e-4 on its first loss and 2e-3 on the rest (measured 4.6e-4 since
the triplet trainer convolves channels-last, whose kernels round differently for 6 and 12 images, and
1.2e-6 before): batch-hard mining picks the hardest pairs by max, another kink for rounding to move.
Episodic training gathers the whole episode the same way. Its losses, cross-entropies of softmaxes over
distances, do not change when every embedding moves alike, so the embedding's bias is such a rounding-steered
coordinate: SPE's losses get 1e-4 (measured 1.9e-7) and its weights 1e-3 except that bias (measured 3.2e-3 there,
<= 8.8e-6 elsewhere); PN's point embedding lets the drift reach the loss: its first loss gets 1e-4 (measured 0),
the rest 2e-3 (measured 1.7e-4). SPE's head, outside DistributedDataParallel, starts from rank 0's values (rank
1's is perturbed before training) and stays equal on both ranks.
"""
import socket

import numpy as np
import pytest
import torch
import torch.multiprocessing as mp

from hedgekit.data import random_occlusion
from hedgekit.embedding import Embedding
from hedgekit.errors import InputError
from hedgekit.nets import build_model
from hedgekit.methods import SPE
from hedgekit.training import distributed
from hedgekit.training.episodic import EpisodicConfig, fit_episodic
from hedgekit.training.fit import TrainConfig, fit
from hedgekit.training.triplets import TripletConfig, fit_triplets
from hedgekit.training.upstream import UpstreamConfig, UpstreamModel, fit_upstream

# (name, kind, TrainConfig kwargs, or None for the triplet and episodic loops); batch 4 x 3 = 12 images, 6 per
# rank; episodes of 3 classes x (2 support + 2 query) = 12 images
RUNS = [
    ("hib-all-pairs", "hib", dict()),
    ("point-hard", "point", dict(loss="hard")),
    ("mog2-two-stream", "hib", dict(pairing="two_stream", pairs_per_batch=9)),
    ("het-triplet", "het", None),
    ("episodic-pn", "point", None),
    ("episodic-spe", "hib", None),
]
RTOL = {"point-hard": 2e-2, "het-triplet": 2e-3, "episodic-pn": 2e-3}  # after the first step (module docstring);
# 1e-4 for the others
FREE = {"episodic-spe": "head.branches.0.bias"}  # a weight the loss does not see move (module docstring)


def _data():
    g = torch.Generator().manual_seed(0)
    y = torch.arange(6).repeat_interleave(8)
    protos = (torch.rand(6, 28, 56, generator=g) > 0.8).float()
    return (0.3 + 0.6 * protos[y] + 0.2 * torch.randn(len(y), 28, 56, generator=g)).clamp(0, 1), y


def _train(name: str, kind: str, cfg: dict | None, rank: int = 0) -> tuple[list, dict]:
    x, y = _data()
    torch.manual_seed(7)
    model = build_model(kind, n_digits=2, dim=3, components=2 if name.startswith("mog2") else 1)
    if name.startswith("episodic"):
        head = SPE.for_episodes(3, 2, dim=3) if name.endswith("spe") else None
        if head is not None and rank > 0:  # the loop must give every rank rank 0's head
            with torch.no_grad():
                head.gamma.add_(1.0)
        cfg = EpisodicConfig(steps=8, n_classes=3, k_support=2, query_per_class=2, log_every=1)
        hist = fit_episodic(model, head, x, y, cfg, seed=5, progress=False, augment=random_occlusion(0.5))
        if head is not None:
            model.add_module("spe_head", head)  # its weights are compared with the model's
    elif cfg is None:
        hist = fit_triplets(model, x, y, TripletConfig(steps=8, P=4, K=3, log_every=1), seed=5, progress=False)
    else:
        hist = fit(model, x, y, TrainConfig(steps=8, classes_per_batch=4, per_class=3, k=4, log_every=1, **cfg),
                   seed=5, progress=False, augment=random_occlusion(0.5))
    return [r["loss"] for r in hist.rows], {k: v.clone() for k, v in model.state_dict().items()}


def _worker(rank: int, world: int, port: int, out: str) -> None:
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        ctx = distributed.context()
        assert (ctx.rank, ctx.world_size) == (rank, world)
        calls = []
        results = {name: _train(name, kind, cfg, rank) for name, kind, cfg in RUNS}
        # callbacks (which may write files) run on rank 0 only
        fit(build_model("point", n_digits=2), *_data(), TrainConfig(steps=2, classes_per_batch=4, per_class=3),
            progress=False, callback=lambda step, row: calls.append(step))
        shares = []  # each rank embeds its half of a 12-image episode
        model = build_model("point", n_digits=2)
        model.register_forward_hook(lambda module, inputs, output: shares.append(len(inputs[0])))
        fit_episodic(model, None, *_data(), EpisodicConfig(steps=2, n_classes=3, k_support=2, query_per_class=2),
                     progress=False)
        try:  # the URL heads' losses are not gathered over ranks: refused
            fit_upstream(UpstreamModel(torch.nn.Flatten(), torch.nn.Identity()), torch.rand(8, 1, 2, 2),
                         torch.arange(4).repeat(2), UpstreamConfig(steps=1, classes_per_batch=2, per_class=2))
            upstream = "trained"
        except InputError as exc:
            upstream = str(exc)
        torch.save({"results": results, "calls": calls, "shares": shares, "upstream": upstream}, f"{out}.{rank}")
    finally:
        dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("ddp") / "rank")
    mp.spawn(_worker, args=(2, _free_port(), out), nprocs=2, join=True)
    return [torch.load(f"{out}.{r}", weights_only=False) for r in range(2)]


@pytest.mark.slow  # two processes start torch and train 9 tiny runs (~20-40 s on 2 shared cores)
@pytest.mark.parametrize("name, kind, cfg", RUNS, ids=[r[0] for r in RUNS])
def test_two_processes_follow_the_single_process_loss_curve(two_ranks, name, kind, cfg):
    torch.set_num_threads(1)
    losses, state = _train(name, kind, cfg)
    for rank in (0, 1):
        got_losses, got_state = two_ranks[rank]["results"][name]
        np.testing.assert_allclose(got_losses[0], losses[0], rtol=1e-4)  # before rounding can compound
        np.testing.assert_allclose(got_losses, losses, rtol=RTOL.get(name, 1e-4))
        if name not in RTOL:
            for key, value in ((k, v) for k, v in state.items() if k != FREE.get(name)):
                torch.testing.assert_close(got_state[key], value, rtol=1e-3, atol=1e-3, msg=key)
    if name == "episodic-spe":  # the head is the same on both ranks
        for key in (k for k in state if k.startswith("spe_head")):
            assert torch.equal(two_ranks[0]["results"][name][1][key], two_ranks[1]["results"][name][1][key])
    assert losses[-1] < losses[0]  # it did train (the curve is not flat)


@pytest.mark.slow
def test_only_rank_0_calls_back(two_ranks):
    assert two_ranks[0]["calls"] == [0, 1] and two_ranks[1]["calls"] == []


@pytest.mark.slow
def test_episodic_training_splits_each_episode_over_the_ranks(two_ranks):
    assert two_ranks[0]["shares"] == two_ranks[1]["shares"] == [6, 6]


@pytest.mark.slow
def test_upstream_training_refuses_torchrun_saying_why(two_ranks):
    for rank in (0, 1):
        assert two_ranks[rank]["upstream"].startswith("this trainer runs in one process only (the URL heads' losses")


# ------------------------------------------------------------------ without a process group
def test_single_process_context():
    ctx = distributed.context()
    assert (ctx.rank, ctx.world_size, ctx.is_main, ctx.active) == (0, 1, True, False)
    assert ctx.share(7) == slice(0, 7)
    row = {"step": 3, "loss": 0.5}
    assert ctx.mean(row) is row
    model = build_model("point", n_digits=1)
    assert distributed.wrap(model, ctx) is model
    emb = Embedding.point(torch.randn(4, 2))
    assert distributed.gather_embedding(emb, ctx, 4) is emb


@pytest.mark.parametrize("n, world, sizes", [(12, 2, [6, 6]), (7, 3, [3, 2, 2]), (3, 3, [1, 1, 1])])
def test_shares_are_contiguous_and_cover_the_batch(n, world, sizes):
    shares = [distributed.Context(r, world).share(n) for r in range(world)]
    assert [s.stop - s.start for s in shares] == sizes
    assert np.concatenate([np.arange(n)[s] for s in shares]).tolist() == list(range(n))


def test_batch_smaller_than_world_is_an_input_error():
    with pytest.raises(InputError, match="cannot be split over 4 processes"):
        distributed.Context(0, 4).share(3)


def test_init_from_env_without_torchrun_is_a_single_process(monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert distributed.init_from_env() == distributed.Context()
