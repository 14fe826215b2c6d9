"""Taha et al. 2019, "Unsupervised data uncertainty learning in visual retrieval systems" (heteroscedastic
triplet retrieval): notebook 08.

``from hedgekit.papers import taha`` gives every part: `taha.numbers`, `taha.experiments`, `taha.protocol`,
`taha.claims`, `taha.figures`, `taha.noise_study`. The method itself is `hedgekit.methods.het_triplet`.
"""
from hedgekit.papers.taha import claims, experiments, figures, noise_study, numbers, protocol

__all__ = ["claims", "experiments", "figures", "noise_study", "numbers", "protocol"]
