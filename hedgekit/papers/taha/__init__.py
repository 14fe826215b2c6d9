"""Taha et al. 2019, "Unsupervised data uncertainty learning in visual retrieval systems" (heteroscedastic
triplet retrieval): notebook 08.

``from hedgekit.papers import taha`` gives every part: `taha.numbers`, `taha.experiments`, `taha.protocol`,
`taha.claims`, `taha.figures`, `taha.noise_study`, `taha.ambiguity_noise`. The method itself is
`hedgekit.methods.het_triplet`.
"""
from hedgekit.papers import lazy_parts

__all__ = ["ambiguity_noise", "claims", "experiments", "figures", "noise_study", "numbers", "protocol"]
__getattr__, __dir__ = lazy_parts(__name__, __all__)  # parts load on first use
