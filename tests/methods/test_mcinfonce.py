"""MCInfoNCE (URL App. B.3, eq. 2). Oracle: as kappa grows the vMF samples collapse onto the means, so
the loss tends to InfoNCE of the means (itself checked against a loop in test_infonce.py); u = 1 / kappa."""
import pytest
import torch

from hedgekit.methods.infonce import label_info_nce, two_view_info_nce
from hedgekit.methods.upstream import build_method


def test_mcinfonce_tends_to_infonce_for_large_kappa():
    torch.manual_seed(0)
    mc = build_method("mcinfonce", 6, 4, embed_dim=4, t=5.0, kappa_init=1e6, n_samples=4)
    x, y = torch.randn(6, 6), torch.tensor([0, 0, 1, 1, 2, 2])
    out = mc(x)
    torch.testing.assert_close(out["uncertainty"], 1 / out["kappa"])
    e = out["embedding"].detach().double()
    assert mc.loss(out, y).item() == pytest.approx(label_info_nce(5.0 * e @ e.T, y).item(), abs=0.05)


def test_two_view_mcinfonce_tends_to_two_view_infonce():
    torch.manual_seed(0)
    mc = build_method("mcinfonce_2v", 6, 4, embed_dim=4, t=5.0, kappa_init=1e6, n_samples=4)
    out = mc(torch.randn(8, 6))  # 2 views of 4 images
    e = out["embedding"].detach().double()
    assert not mc.supervised
    assert mc.loss(out, None).item() == pytest.approx(two_view_info_nce(5.0 * e @ e.T).item(), abs=0.05)
