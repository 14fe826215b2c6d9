"""Oh et al. 2019, "Modeling Uncertainty with Hedged Instance Embedding" (HIB): notebooks 01-05.

``from hedgekit.papers import hib`` gives every part: `hib.numbers`, `hib.experiments`, `hib.protocol`,
`hib.analysis`, `hib.claims`, `hib.figures`, `hib.widgets`.
"""
from hedgekit.papers.hib import analysis, claims, experiments, figures, numbers, protocol, widgets

__all__ = ["analysis", "claims", "experiments", "figures", "numbers", "protocol", "widgets"]
