"""hedgekit.papers.hib.runs: what the intervals of HIB's claims table are computed over, against hand computations."""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats

from hedgekit.papers.hib import runs as R


def _eval(values: dict, n_images: int = 1000):
    """A stand-in for `RepeatedEvaluation`: per-repeat values, their mean, the test images."""
    return SimpleNamespace(values={k: np.asarray(v, float) for k, v in values.items()},
                           mean=lambda k: float(np.mean(values[k])), n_images=n_images)


def test_per_run_combines_columns_run_by_run_with_a_t_interval():
    e = R.per_run([[1.0, 2.0, 3.0], [3.0, 4.0, 8.0]], np.mean, "mean", "seeds")  # run means 2, 3, 5.5
    assert e.mean == pytest.approx(3.5) and e.n == 3
    lo, hi = e.interval()
    ref = stats.t.interval(0.95, 2, loc=3.5, scale=stats.sem([2.0, 3.0, 5.5]))
    assert (lo, hi) == pytest.approx(ref)
    assert R.per_run([[1.0], []], np.mean, "mean", "seeds") is None  # a column without runs: not measured


def test_gap_on_seeds_is_unpaired_and_one_models_constant_knn_takes_the_binomial_error():
    seeds = {"a": [_eval({"knn_corrupt": [0.8]}), _eval({"knn_corrupt": [0.9]})],
             "b": [_eval({"knn_corrupt": [0.7]}), _eval({"knn_corrupt": [0.75]})]}
    e = R.gap("a", "b", "knn_corrupt")(R.seed_view(seeds))
    assert e.mean == pytest.approx(0.125) and e.kind == "unpaired" and e.noise == "seed-to-seed spread"
    assert e.se == pytest.approx(math.sqrt(np.var([0.8, 0.9], ddof=1) / 2 + np.var([0.7, 0.75], ddof=1) / 2))
    one = {"a": _eval({"knn_corrupt": [0.8] * 5}), "b": _eval({"knn_corrupt": [0.7] * 5})}
    e = R.gap("a", "b", "knn_corrupt")(R.repeat_view(one))
    assert e.se == pytest.approx(math.sqrt(0.8 * 0.2 / 1000 + 0.7 * 0.3 / 1000)) and "1000 test images" in e.noise
    assert R.gap("a", "c", "knn_corrupt")(R.repeat_view(one)) is None  # a model not evaluated: not measured
    assert R.seed_view({"a": [_eval({"x": [1.0]})]}) == {}  # one seed is no seed spread


def test_exact_reads_a_difference_of_reported_decimals_as_the_number_it_is():
    assert 0.907 - 0.880 != 0.027 and R.exact(0.907 - 0.880) == 0.027
