"""Scott, Ridgeway & Mozer 2019, "Stochastic Prototype Embeddings" (SPE): notebooks 06-07.

``from hedgekit.papers import spe`` gives every part: `spe.numbers`, `spe.experiments`, `spe.protocol`,
`spe.claims`, `spe.figures`, `spe.bayes` (the Bayes-optimal and oracle accuracies on L-shapes) and
`spe.lesson` (the lessons at the top of notebooks 06-07).
"""
from hedgekit.papers import lazy_parts

__all__ = ["bayes", "claims", "experiments", "figures", "lesson", "numbers", "protocol"]
__getattr__, __dir__ = lazy_parts(__name__, __all__)  # parts load on first use
