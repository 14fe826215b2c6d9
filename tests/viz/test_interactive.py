"""hedgekit.viz.interactive: the app's plotly figures are valid and show what they say."""
from __future__ import annotations


import numpy as np
import plotly.graph_objects as go
import pytest

from hedgekit.errors import InputError
from hedgekit.evaluation.centroids import centroid_table
from hedgekit.interactive.maps import map_layers, update_trail
from hedgekit.interactive.occlusion import analyse
from hedgekit.viz import interactive as pi



# ---------------------------------------------------------------------- plotly figures
class TestFigures:
    def test_figures_are_valid_plotly(self, untrained, test_seen):
        model = untrained(components=2)
        table = centroid_table(model, [test_seen], per_class=3)
        a = analyse(model, test_seen.images[0], [[0, 0, 5, 5]], table)
        trail = update_trail(update_trail([], analyse(model, test_seen.images[0], [], table)), a)
        layers = map_layers(a, trail, point_xy=[0.0, 0.0])
        figs = [pi.embedding_map(table, layers, "ones", dark=True), pi.eta_gauge(0.4, 0.1, floor=0.05),
                pi.image_figure(a.image, a.boxes, pending=[[1, 1, 2, 2]]), pi.top_classes_figure(a.top)]
        for fig in figs:
            go.Figure(fig.to_dict())  # plotly's full validation
        names = [t.name for t in figs[0].data]
        assert "mixture components" in names and "point model" in names and "1σ ellipse" in names
        assert len(figs[2].layout.shapes) == 1 + 1 + 1  # box, pending box, digit separator
        assert figs[2].layout.dragmode == "select"

    def test_bad_arguments(self, untrained, test_seen):
        model = untrained()
        table = centroid_table(model, [test_seen], per_class=2)
        layers = map_layers(analyse(model, test_seen.images[0], [], table))
        with pytest.raises(InputError, match="color_by"):
            pi.embedding_map(table, layers, "hundreds")
        with pytest.raises(InputError, match="finite"):
            pi.eta_gauge(float("nan"))

    def test_tiny_ellipse_gets_a_pointer_and_no_zero_delta(self, untrained, test_seen):
        """A 1σ ellipse narrower than 3% of the view is pointed at; zoomed in, it needs no pointer. The gauge shows
        no delta when eta equals the reference (no "+0.000")."""
        model = untrained()
        table = centroid_table(model, [test_seen], per_class=2)
        layers = map_layers(analyse(model, test_seen.images[0], [], table), sigmas=(1,))
        (_, _, curve), = layers.ellipses
        width = float(max(np.ptp(curve[:, 0]), np.ptp(curve[:, 1])))
        far = ((layers.mean[0] - 50 * width, layers.mean[0] + 50 * width), (layers.mean[1] - 1, layers.mean[1] + 1))
        near = ((layers.mean[0] - width, layers.mean[0] + width), (layers.mean[1] - width, layers.mean[1] + width))
        assert "tiny" in pi.embedding_map(table, layers, extent=far).layout.annotations[0].text
        assert not pi.embedding_map(table, layers, extent=near).layout.annotations
        assert pi.eta_gauge(0.25, 0.25).data[0].mode == "gauge+number"
        assert pi.eta_gauge(0.30, 0.25).data[0].mode == "gauge+number+delta"
