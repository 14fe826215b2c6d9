"""Datasets: MNIST, N-digit MNIST with occlusion (HIB, Appendix A)."""
from hedgekit.data.mnist import load_mnist
from hedgekit.data.ndigit import NDigitSet, class_split, load_ndigit
from hedgekit.data.occlusion import clip_box, occlude, random_occlusion, sample_digit_boxes
from hedgekit.data.lshapes import (LShapes, bayes_accuracy_1d, bayes_optimal_accuracy, centroid_sweep,
                                   class_log_likelihood, class_posterior, interpolation_grid, make_lshapes,
                                   render_batch, render_lshape, sample_factors)
