"""Scott, Ridgeway & Mozer 2019, "Stochastic Prototype Embeddings" (SPE): notebooks 06-07.

``from hedgekit.papers import spe`` gives every part: `spe.numbers`, `spe.experiments`, `spe.protocol`,
`spe.claims`, `spe.figures`, and `spe.bayes` (the Bayes-optimal and oracle accuracies on L-shapes).
"""
from hedgekit.papers.spe import bayes, claims, experiments, figures, numbers, protocol

__all__ = ["bayes", "claims", "experiments", "figures", "numbers", "protocol"]
