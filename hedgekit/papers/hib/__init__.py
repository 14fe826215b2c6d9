"""Oh et al. 2019, "Modeling Uncertainty with Hedged Instance Embedding" (HIB): notebooks 01-05.

``from hedgekit.papers import hib`` gives every part: `hib.numbers`, `hib.experiments`, `hib.protocol`,
`hib.analysis`, `hib.claims`, `hib.figures`, `hib.widgets`.
"""
from hedgekit.papers import lazy_parts

__all__ = ["analysis", "claims", "experiments", "figures", "numbers", "protocol", "widgets"]
__getattr__, __dir__ = lazy_parts(__name__, __all__)  # parts load on first use
