"""How long one playground update takes (`benchmark_update`): the app's latency budget, measured.

One update is what the app's map pages do on every occlusion change: `hedgekit.interactive.view.model_view`
(analyse, the clean image's eta, trail, ellipse layers, zoom extent; HIB sec. 2.4 eta, Fig. 3-4 ellipses) and, if
asked, the plotly figures of `hedgekit.viz.interactive`. ``python -m hedgekit bench --app`` prints it.
"""
from __future__ import annotations

import statistics
import time

import numpy as np
import torch

from hedgekit.data import load_ndigit, sample_digit_boxes
from hedgekit.errors import InputError
from hedgekit.evaluation.centroids import centroid_table
from hedgekit.interactive.models import APP_CENTROID_IMAGES, load_model
from hedgekit.interactive.occlusion import APP_POINTS
from hedgekit.interactive.view import model_view
from hedgekit.nets import EmbeddingNet
from hedgekit.viz.interactive import embedding_map, eta_gauge, image_figure

__all__ = ["APP_THREADS", "benchmark_update"]

# torch intra-op threads in the app: one update is a single tiny forward pass, for which
# extra threads only add synchronisation; on 2 busy cores 2 threads made p95 10x worse
# (measured: 8 ms -> 100 ms for MoG-1). Several sessions then run side by side instead.
APP_THREADS = 1


def benchmark_update(spec_or_model, n: int = 200, *, seed: int = 0, n_points: int = APP_POINTS,
                     warmup: int = 10, figure: bool = True, split: str = "test_seen",
                     threads: int | None = APP_THREADS) -> dict:
    """Time one playground update, ``n`` times on random test images and random rectangles.

    Timed work per update (what the app's map pages do on every occlusion change, `model_view`):
    validate the boxes, occlude, forward pass, eta, top-5 over all centroids, 2D geometry, trail,
    ellipse contours and zoom extent, and the clean image's eta, remembered per image as the app's
    session does (the updates cycle over 10 test images, as a user moves rectangles on one image
    at a time, so an image's first update also pays for its clean forward pass). With
    ``figure=True`` the plotly figures (`hedgekit.viz.interactive`) are also built and timed
    separately. Setup (loading the model, data and centroid table) is not timed.

    Args:
        spec_or_model: an `EmbeddingNet`, or a `hedgekit.zoo.Spec` (loaded or trained by
            `hedgekit.zoo.load_or_train`).
        threads: torch intra-op threads during the timing (restored afterwards);
            default `APP_THREADS`, what the app uses. None keeps the current setting.

    Returns:
        dict with p50_ms, p95_ms, mean_ms, max_ms of the update; figure_p50_ms,
        figure_p95_ms and total_p95_ms (update + figures) if ``figure``; n, n_points,
        threads (torch intra-op threads), model, setup_s.
    """
    if n < 1:
        raise InputError(f"n must be >= 1; got {n}")
    previous = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        return _benchmark(spec_or_model, n, seed, n_points, warmup, figure, split)
    finally:
        torch.set_num_threads(previous)


def _benchmark(spec_or_model, n, seed, n_points, warmup, figure, split) -> dict:
    t_setup = time.perf_counter()
    if isinstance(spec_or_model, EmbeddingNet):
        model, name = spec_or_model, spec_or_model.config.get("kind", "model")
    else:
        model, _ = load_model(spec_or_model)
        name = spec_or_model.name
    model.eval()
    n_digits = model.config.get("n_digits", 2)
    data = load_ndigit(n_digits, split)
    table = centroid_table(model, [data], per_class=APP_CENTROID_IMAGES)
    rng = np.random.default_rng(seed)
    pool = rng.choice(len(data), size=min(10, len(data)), replace=False)
    idx = pool[rng.integers(0, len(pool), warmup + n)]
    boxes = sample_digit_boxes(rng, warmup + n, n_digits, 0.7)
    setup_s = time.perf_counter() - t_setup
    upd, fig_ms, trails, clean_eta = [], [], {}, {}
    for i in range(warmup + n):
        bx = [b for b in boxes[i].tolist() if b[2] > 0 and b[3] > 0]
        k = int(idx[i])

        def remember(compute, k=k):
            if k not in clean_eta:
                clean_eta[k] = compute()
            return clean_eta[k]

        t0 = time.perf_counter()
        view = model_view(model, data.images[k], bx, table, trails.get(k, []), remember=remember, n_points=n_points)
        trails[k] = view.trail
        t1 = time.perf_counter()
        if figure:
            embedding_map(table, view.layers, extent=view.extent)
            eta_gauge(view.analysis.eta, view.eta_clean)
            image_figure(view.analysis.image, view.analysis.boxes)
        t2 = time.perf_counter()
        if i >= warmup:
            upd.append(1e3 * (t1 - t0))
            fig_ms.append(1e3 * (t2 - t1))

    def pct(v, q):
        return float(np.percentile(v, q))

    out = {"model": name, "n": n, "n_points": n_points, "threads": torch.get_num_threads(),
           "p50_ms": pct(upd, 50), "p95_ms": pct(upd, 95), "mean_ms": statistics.fmean(upd), "max_ms": max(upd),
           "setup_s": round(setup_s, 2)}
    if figure:
        tot = np.add(upd, fig_ms)
        out.update(figure_p50_ms=pct(fig_ms, 50), figure_p95_ms=pct(fig_ms, 95), total_p50_ms=pct(tot, 50),
                   total_p95_ms=pct(tot, 95))
    return out
