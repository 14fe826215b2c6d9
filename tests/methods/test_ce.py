"""CE (URL App. B.1). Oracle: the class entropy of known logits, computed by hand."""
import math

import torch

from hedgekit.methods.upstream import build_method


def test_entropy_of_known_logits_and_cross_entropy():
    m = build_method("ce", 3, 3, embed_dim=3)
    with torch.no_grad():  # identity projection and classifier: logits = features
        for lin in (m.project, m.classifier):
            lin.weight.copy_(torch.eye(3)); lin.bias.zero_()
    x = torch.tensor([[0.0, 0.0, 0.0], [math.log(2.0), 0.0, 0.0], [50.0, 0.0, 0.0]])
    out = m(x)
    p = [1 / 3, 1 / 3, 1 / 3], [0.5, 0.25, 0.25]
    expected = [math.log(3), -sum(q * math.log(q) for q in p[1]), 0.0]
    torch.testing.assert_close(out["uncertainty"], torch.tensor(expected), atol=1e-5, rtol=0)
    y = torch.tensor([0, 1, 0])
    torch.testing.assert_close(m.loss(out, y), torch.tensor((math.log(3) - math.log(0.25) + 0.0) / 3), atol=1e-5, rtol=0)
