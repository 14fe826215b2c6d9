"""The upstream loop of the URL benchmark: on_step sees each step's batch after that step's optimiser update,
and predict collects e(x), u(x) and logits batch by batch."""
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from hedgekit.training.upstream import UpstreamConfig, UpstreamModel, fit_upstream, predict


class Recorder(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)
        self.seen = []  # (weight at forward time, weight when on_step ran, batch labels)

    def forward(self, f):
        logits = self.lin(f)
        return {"embedding": logits, "uncertainty": -logits.max(1).values, "logits": logits,
                "w": self.lin.weight.detach().clone()}

    def loss(self, out, labels):
        return F.cross_entropy(out["logits"], labels)

    def on_step(self, features, out, labels):
        self.seen.append((out["w"], self.lin.weight.detach().clone(), labels.clone()))


def test_on_step_runs_after_every_optimiser_step():
    x = torch.rand(30, 1, 2, 2)
    y = torch.arange(3).repeat(10)
    head = Recorder()
    model = UpstreamModel(nn.Flatten(), head)
    fit_upstream(model, x, y, UpstreamConfig(steps=5, classes_per_batch=3, per_class=2, occlusion_p=0.0),
                 progress=False)
    assert len(head.seen) == 5
    for before, after, labels in head.seen:
        assert not torch.equal(before, after)  # the hook saw the weights after the update
        assert sorted(labels.tolist()) == [0, 0, 1, 1, 2, 2]  # P = 3 classes x Q = 2
    torch.testing.assert_close(head.seen[-1][1], head.lin.weight.detach())


def test_predict_concatenates_batches_in_eval_mode():
    model = UpstreamModel(nn.Sequential(nn.Flatten(), nn.Dropout(0.5)), Recorder())
    x = torch.rand(7, 1, 2, 2)
    out = predict(model, x, batch=3)
    assert not model.training
    ref = model.head.lin(x.flatten(1)).double().detach().numpy()  # dropout is off in eval mode
    np.testing.assert_allclose(out["logits"], ref, rtol=1e-6)
    assert out["embedding"].shape == (7, 3) and out["uncertainty"].shape == (7,)
