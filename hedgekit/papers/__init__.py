"""Each paper's reproduction material in one folder: ``numbers`` (the paper's numbers, the only place they
live), ``experiments`` (which models), ``protocol`` (how they are evaluated), ``claims`` (computed verdicts)
and ``figures``. `hedgekit.papers.verdict` is the verdict type every paper's claims share."""
