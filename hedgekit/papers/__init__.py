"""Each paper's reproduction material in one folder: ``numbers`` (the paper's numbers, the only place they
live), ``experiments`` (which models), ``protocol`` (how they are evaluated), ``claims`` (computed verdicts)
and ``figures``. `hedgekit.papers.verdict` is the verdict type every paper's claims share.

A paper's package loads its parts when first used (`lazy_parts`): ``hib.figures`` imports matplotlib, seaborn and
scipy, and a notebook's first cell, which needs only ``hib.experiments``, must not wait for them.
"""
from __future__ import annotations

import importlib


def lazy_parts(package: str, parts: list[str]):
    """The module ``__getattr__`` and ``__dir__`` (PEP 562) of a paper's ``package``: ``package.part`` imports
    its module ``part`` (one of ``parts``) on first use, so ``from hedgekit.papers import hib; hib.figures`` and
    ``from hedgekit.papers.hib import figures`` both keep working."""
    def __getattr__(name: str):
        if name in parts:
            return importlib.import_module(f"{package}.{name}")
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(parts) | set(vars(importlib.import_module(package))))

    return __getattr__, __dir__
