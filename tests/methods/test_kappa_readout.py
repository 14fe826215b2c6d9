"""kappa is read as the paper reads it: certainty, so u(x) = 1 / kappa(x) (URL sec. 4.1,
"kappa(x) =: 1/u(x)"; the official code, github.com/mkirchhof/url, ``timm/loss``: ``kappa = 1 / unc``), for every
vMF head: MCInfoNCE (both heads), ELK, nivMF and HIB.

Oracles, hand-made cases:
* the read-out: a head whose u MLP ends in zero weights and the bias softplus^-1(1 / k) outputs u = 1 / k + 1e-6
  and kappa = 1 / u for every image (the official code's parameterisation), so a larger k must give a larger kappa
  and a smaller u;
* the loss reads kappa the same way: an image whose mean sits where its loss wants it (on its class proxy, or on
  its positive) lowers its loss by growing kappa (d loss / d kappa < 0), an image whose mean sits at the wrong place
  (another class's proxy, or opposite its positive) lowers it by shrinking kappa (d loss / d kappa > 0). A sign or an
  inversion error in the read-out or in the loss flips one of these.
"""
import pytest
import torch

from hedgekit.methods.upstream import build_method, inverse_softplus
from hedgekit.methods.vmf import log_expected_likelihood

KAPPA_HEADS = ["mcinfonce", "mcinfonce_2v", "elk", "nivmf", "hib"]
E = torch.eye(4)


@pytest.mark.parametrize("name", KAPPA_HEADS)
def test_a_larger_kappa_gives_a_smaller_u(name):
    torch.manual_seed(0)
    head = build_method(name, 6, 3, embed_dim=4)
    features = torch.randn(5, 6)
    u = {}
    for k in (2.0, 50.0):
        with torch.no_grad():
            head.u_net[-1].weight.zero_()
            head.u_net[-1].bias.fill_(inverse_softplus(1 / k))
        out = head(features)
        torch.testing.assert_close(out["uncertainty"], torch.full((5,), 1 / k + 1e-6))
        torch.testing.assert_close(out["kappa"], 1 / torch.full((5,), 1 / k + 1e-6))
        u[k] = out["uncertainty"]
    assert (u[50.0] < u[2.0]).all()


def test_kappa_init_starts_every_image_there():
    head = build_method("elk", 6, 3, embed_dim=4, kappa_init=100.0)
    with torch.no_grad():
        head.u_net[-1].weight.zero_()
    torch.testing.assert_close(head(torch.randn(3, 6))["kappa"], torch.full((3,), 1 / (1 / 100 + 1e-6)))


def _kappa_grad(loss_of_kappa, n: int) -> torch.Tensor:
    kappa = torch.full((n,), 5.0, dtype=torch.float64, requires_grad=True)
    loss_of_kappa(kappa).backward()
    return kappa.grad


def _proxies(head):
    """Class 0's proxy on axis 0, class 1's on axis 1 (unit concentrations t)."""
    with torch.no_grad():
        head.proxies.directions.copy_(E[:2])


def test_elk_loss_grows_kappa_on_its_class_and_shrinks_it_on_another():
    head = build_method("elk", 6, 2, embed_dim=4, t=8.0).double()
    _proxies(head)
    e, y = E[[0, 0]].double(), torch.tensor([0, 1])  # both on class 0's proxy; the second is labelled 1

    def loss(kappa):
        nu, lam = head.proxies()
        logits = log_expected_likelihood(e @ nu.T, kappa[:, None], lam, 4)
        return head.loss({"logits": logits}, y)

    grad = _kappa_grad(loss, 2)
    assert grad[0] < 0 < grad[1]


def test_nivmf_loss_grows_kappa_on_its_class_and_shrinks_it_on_another():
    head = build_method("nivmf", 6, 2, embed_dim=4, t=8.0, n_samples=4000).double()
    _proxies(head)
    e, y = E[[0, 0]].double(), torch.tensor([0, 1])
    torch.manual_seed(0)
    grad = _kappa_grad(lambda kappa: head.loss({"embedding": e, "kappa": kappa}, y), 2)
    assert grad[0] < 0 < grad[1]


# two classes of two images: 0 and 1 share a point (a well-placed pair), 2 and 3 sit at opposite points
PAIRED = E[[0, 0, 1]].double(), torch.tensor([0, 0, 1, 1])


@pytest.mark.parametrize("name", ["mcinfonce", "hib"])
def test_pairwise_losses_grow_kappa_of_a_matched_pair_and_shrink_it_of_a_split_one(name):
    head = build_method(name, 6, 2, embed_dim=4, t=8.0, n_samples=4000).double()
    e = torch.cat([PAIRED[0], -E[[1]].double()])
    torch.manual_seed(0)
    grad = _kappa_grad(lambda kappa: head.loss({"embedding": e, "kappa": kappa}, PAIRED[1]), 4)
    assert grad[0] < 0 and grad[1] < 0 and grad[2] > 0 and grad[3] > 0


def test_two_view_mcinfonce_grows_kappa_of_agreeing_views_and_shrinks_it_of_opposite_ones():
    head = build_method("mcinfonce_2v", 6, 2, embed_dim=4, t=8.0, n_samples=4000).double()
    # views [image 0, image 1, image 0, image 1]: image 0's views agree (axis 0), image 1's are opposite (axis 1)
    e = torch.stack([E[0], E[1], E[0], -E[1]]).double()
    torch.manual_seed(0)
    grad = _kappa_grad(lambda kappa: head.loss({"embedding": e, "kappa": kappa}), 4)
    assert grad[0] < 0 and grad[2] < 0 and grad[1] > 0 and grad[3] > 0
