"""Scott, Ridgeway & Mozer 2019, "Stochastic Prototype Embeddings" (SPE): notebooks 06-07.

``from hedgekit.papers import spe`` gives every part: `spe.numbers`, `spe.experiments`, `spe.protocol`,
`spe.claims`, `spe.figures`, and `spe.lesson` (the lessons at the top of notebooks 06-07).
"""
from hedgekit.papers.spe import claims, experiments, figures, lesson, numbers, protocol

__all__ = ["claims", "experiments", "figures", "lesson", "numbers", "protocol"]
