"""The kit's plot style: white backgrounds that read the same in JupyterLab's light and dark themes and in
the report, seaborn's 'ticks' look, and the shared colours. Every paper's figures draw with `figure`."""
from __future__ import annotations

import matplotlib
import matplotlib.pyplot as plt
import numpy as np

__all__ = ["TAB10", "OCCLUDER", "INK", "FACE", "use_paper_style", "figure"]

TAB10 = tuple(matplotlib.colormaps["tab10"].colors)
OCCLUDER = "#ff7f0e"
INK = "#222222"
FACE = "white"


def use_paper_style() -> None:
    """Seaborn 'ticks' style with white figure and axes backgrounds (light and dark themes)."""
    import seaborn as sns

    sns.set_theme(style="ticks", context="notebook", font_scale=0.9)
    plt.rcParams.update({"figure.facecolor": FACE, "axes.facecolor": FACE, "savefig.facecolor": FACE,
                         "figure.dpi": 90, "axes.titlesize": 11, "figure.max_open_warning": 0})


def figure(nrows=1, ncols=1, **kw):
    """`plt.subplots` with white figure and axes backgrounds; returns (fig, ax)."""
    kw.setdefault("facecolor", FACE)
    fig, ax = plt.subplots(nrows, ncols, **kw)
    fig.patch.set_facecolor(FACE)
    for a in np.atleast_1d(ax).ravel():
        a.set_facecolor(FACE)
    return fig, ax
