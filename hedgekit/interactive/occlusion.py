"""One occluded input under one model: its embedding, eta and best-matching classes (HIB sec. 2.4, eq. 4, 9).

What `analyse` computes, and how:

* the input's embedding p(z|x): per-component means and diagonal covariances,
  and their moment-matched Gaussian; for D > 2 everything is shown through a
  fixed linear map W (PCA of the centroids, `hedgekit.evaluation.centroids`):
  mu' = W^T mu, Sigma' = W^T Sigma W;
* eta(x) = 1 - p(m|x, x) (HIB eq. 9) computed deterministically
  (`hedgekit.uncertainty.self_mismatch`), so the gauge never flickers;
* top-k classes by p(m | x, c) = E_{z ~ p(z|x)} sigmoid(-a ||z - c|| + b) with the
  class centroid c taken as a point (HIB eq. 4 with a point for the second input);
  these are match probabilities, one per class, not a distribution over classes.

`hedgekit.interactive.view.model_view` adds what a page draws of it (trail, ellipses, extent).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from hedgekit.checks import check_count
from hedgekit.embedding import Embedding, project_gaussian
from hedgekit.errors import InputError
from hedgekit.evaluation.centroids import CentroidTable
from hedgekit.interactive.inputs import model_input
from hedgekit.nets import EmbeddingNet
from hedgekit.uncertainty import match_probability, self_mismatch
from hedgekit.viz.geometry import moment_match

__all__ = ["APP_POINTS", "Analysis", "analyse", "eta_floor"]

# QMC points for eta and the top-k match probabilities in the app: the library default,
# so the app shows exactly the eta the notebooks and the evaluation report. Measured:
# the whole update stays ~5-11 ms p95 with it, no reason to trade accuracy for speed.
APP_POINTS = 4096


@dataclass(frozen=True, eq=False)
class Analysis:
    """Everything the app shows about one (occluded) input under one model.

    All arrays are numpy; "xy" quantities are in the 2D view (projected by W for D > 2).
    """

    image: np.ndarray  # (H, W) uint8: the occluded image the model saw
    boxes: np.ndarray  # (n, 4) int64
    covered: float  # fraction of pixels hidden
    weights: np.ndarray  # (C,)
    means: np.ndarray  # (C, D) component means
    variances: np.ndarray  # (C, D) component variances (zeros for a point model)
    mean: np.ndarray  # (D,) mixture mean
    xy: np.ndarray  # (2,) mixture mean in the 2D view
    cov_xy: np.ndarray  # (2, 2) moment-matched covariance in the 2D view
    comp_xy: np.ndarray  # (C, 2)
    comp_cov_xy: np.ndarray  # (C, 2, 2)
    eta: float  # HIB eq. 9
    trace: float  # trace of the mixture covariance in full D (volumetric measure, HIB sec. 2.4)
    top_ids: np.ndarray  # (k,) class ids, most probable match first
    top_probs: np.ndarray  # (k,) p(m | x, centroid)
    is_point: bool
    projected: bool  # D > 2, shown through W
    note: str = ""  # what was done to the input: "inverted: ..." if it looked like dark digits on white

    @property
    def top(self) -> list[tuple[int, float]]:
        return [(int(c), float(p)) for c, p in zip(self.top_ids, self.top_probs)]

    @property
    def dim(self) -> int:
        return self.means.shape[1]

    @property
    def n_components(self) -> int:
        return self.means.shape[0]


def _repeat(emb: Embedding, k: int) -> Embedding:
    return Embedding(emb.mean.expand(k, -1, -1), emb.var.expand(k, -1, -1), emb.weights.expand(k, -1))


@torch.no_grad()
def analyse(model: EmbeddingNet, image, boxes=(), centroids: CentroidTable | None = None,
            n_points: int = APP_POINTS, top_k: int = 5, invert: bool | None = None) -> Analysis:
    """Embed ``image`` with ``boxes`` blacked out and compute what the playground shows.

    Args:
        model: a trained `EmbeddingNet` (eval mode is used).
        image: (H, W) uint8 or float in [0, 1], the *clean* image, white digits on black (a dark-on-light
            image is inverted, see ``invert``); ``boxes`` are applied here.
        boxes: (n, 4) rectangles (top, left, height, width), validated by `check_boxes`.
        centroids: the model's `CentroidTable`; without it there is no top-k and the
            2D view is the first two coordinates.
        n_points: QMC points for eta and the match probabilities (deterministic).
        top_k: how many best-matching classes to list: an integer >= 1, at most the table's classes.
        invert: None inverts an image of dark digits on a light background (`model_input`; ``Analysis.note``
            says so), True / False force it.
    """
    shape = tuple(model.input_shape[1:])
    seen, boxes, covered, note = model_input(image, boxes, shape, invert)
    if model.training:
        model.eval()
    device = next(model.parameters()).device
    x = torch.from_numpy(seen.astype(np.float32) / 255.0).to(device)[None, None]
    emb = model(x).to("cpu").map(lambda t: t.float())
    eta = float(self_mismatch(emb, model.match, n_points)[0])
    d = emb.dim
    if centroids is not None:
        if centroids.dim != d:
            raise InputError(f"centroid table is {centroids.dim}-D but the model embeds in {d}-D")
        w = centroids.projection
        cent = torch.as_tensor(centroids.centroids, dtype=torch.float32)
        probs = match_probability(_repeat(emb, len(cent)), Embedding.point(cent), model.match, n_points).numpy()
        k = min(check_count(top_k, "top_k"), len(probs))  # at most the table's classes
        order = np.lexsort((centroids.class_ids, -probs))[:k]  # ties: smaller class id first
        top_ids, top_probs = centroids.class_ids[order].copy(), probs[order].astype(float)
    else:
        if d < 2:
            raise InputError("1-D embeddings need a centroid table with a (1, 2) projection")
        w = np.eye(d)[:, :2]
        top_ids, top_probs = np.zeros(0, dtype=np.int64), np.zeros(0)
    means = emb.mean[0].numpy().astype(float)
    variances = emb.var[0].numpy().astype(float)
    weights = emb.weights[0].numpy().astype(float)
    comp_xy, comp_cov = project_gaussian(means, variances, w)
    xy, cov_xy = moment_match(weights, comp_xy, comp_cov)
    return Analysis(
        image=seen, boxes=boxes, covered=covered, weights=weights, means=means, variances=variances,
        mean=weights @ means, xy=xy, cov_xy=cov_xy, comp_xy=comp_xy, comp_cov_xy=comp_cov, eta=eta,
        trace=float(emb.total_var()[0].sum()), top_ids=top_ids, top_probs=top_probs,
        is_point=bool(emb.is_point), projected=d != 2, note=note,
    )


def eta_floor(model: EmbeddingNet) -> float:
    """1 - sigmoid(b): the eta of a zero-variance embedding, the smallest eta the model can give (HIB eq. 2, 9)."""
    return float(1.0 - torch.sigmoid(model.match.b.detach()).item())
