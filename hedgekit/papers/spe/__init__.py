"""Scott, Ridgeway & Mozer 2019, "Stochastic Prototype Embeddings" (SPE): notebooks 06-07.

``from hedgekit.papers import spe`` gives every part: `spe.numbers`, `spe.experiments`, `spe.protocol`,
`spe.claims`, `spe.figures`.
"""
from hedgekit.papers.spe import claims, experiments, figures, numbers, protocol

__all__ = ["claims", "experiments", "figures", "numbers", "protocol"]
