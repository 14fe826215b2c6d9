"""Datasets: MNIST, N-digit MNIST with occlusion (HIB App. A), SPE's synthetic L-shapes (App. A.2),
and the batch samplers the trainers draw from (`hedgekit.data.samplers`)."""
from hedgekit.data.fashion import FashionSet, load_fashion
from hedgekit.data.lshapes import (LShapes, centroid_sweep, class_log_likelihood, class_posterior, interpolation_grid,
                                   make_lshapes, render_batch, render_lshape, sample_factors)
from hedgekit.data.mnist import load_mnist
from hedgekit.data.ndigit import NDigitSet, class_split, load_ndigit
from hedgekit.data.occlusion import clip_box, occlude, random_occlusion, sample_digit_boxes

__all__ = ["load_mnist", "load_fashion", "FashionSet", "NDigitSet", "class_split", "load_ndigit", "clip_box", "occlude",
           "random_occlusion", "sample_digit_boxes", "LShapes", "centroid_sweep", "class_log_likelihood", "class_posterior",
           "interpolation_grid", "make_lshapes", "render_batch", "render_lshape", "sample_factors"]
