"""Kirchhof et al. 2023, "URL: A Representation Learning Benchmark for Transferable Uncertainty Estimates":
notebook 09 and ``python -m hedgekit url-benchmark``.

``from hedgekit.papers import url`` gives every part: `url.numbers` (the paper's numbers), `url.protocol`
(data, crop, metrics), `url.benchmark` (budgets, cached runs, leaderboard), `url.claims` (side by side,
computed verdicts) and `url.figures`.
"""
from hedgekit.papers import lazy_parts

__all__ = ["benchmark", "claims", "figures", "numbers", "protocol"]
__getattr__, __dir__ = lazy_parts(__name__, __all__)  # parts load on first use
