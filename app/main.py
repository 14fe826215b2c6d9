"""hedgekit app: occlude digits with the mouse and watch the embedding hedge.

Run from the repository root:

    streamlit run app/main.py

The preset of the models comes from env var ``HEDGEKIT_PRESET`` ("paper" by
default, "fast" for tests and quick looks); the modules named in ``HEDGEKIT_PLUGINS``
register their methods first (`hedgekit.zoo.load_plugins`), so their models join the
lists. Pages live in ``app/views/`` (not ``app/pages/``: Streamlit would also serve that
folder as a legacy multipage app, bypassing this script on direct links) and only lay out
widgets. Shared by them:

* ``app/state.py``: `AppState`, everything a browser session keeps (the only code
  that touches Streamlit's session state);
* ``app/cached.py``: test images, models (trained with progress on first use) and
  class-centroid tables, cached for every session;
* ``app/input_widgets.py``: the input's widgets: image picker, canvas, occlusion controls;
* ``app/ui.py``: theme, notebook links, one-shot messages.

All maths is in ``hedgekit.interactive``, all figures in ``hedgekit.viz.interactive``.
"""
from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st
import torch

from hedgekit.interactive.latency import APP_THREADS
from hedgekit.zoo import load_plugins

APP_DIR = Path(__file__).resolve().parent
if str(APP_DIR) not in sys.path:  # pages import the shared modules above (`state`, `cached`, ...)
    sys.path.insert(0, str(APP_DIR))


def main() -> None:
    # One intra-op thread: an update is one tiny forward pass (see hedgekit.interactive.latency.APP_THREADS).

    if torch.get_num_threads() != APP_THREADS:
        torch.set_num_threads(APP_THREADS)
    load_plugins()  # methods of HEDGEKIT_PLUGINS: the playground offers their `app_models`
    st.set_page_config(page_title="hedgekit: hedged embeddings", page_icon=":material/blur_on:", layout="wide")
    pages = [
        st.Page(APP_DIR / "views" / "playground.py", title="Occlusion playground", icon=":material/blur_on:",
                default=True, url_path="playground"),
        st.Page(APP_DIR / "views" / "compare.py", title="Compare models", icon=":material/compare:",
                url_path="compare"),
        st.Page(APP_DIR / "views" / "retrieval.py", title="Retrieval", icon=":material/image_search:",
                url_path="retrieval"),
        st.Page(APP_DIR / "views" / "benchmark.py", title="Benchmark", icon=":material/leaderboard:",
                url_path="benchmark"),
    ]
    st.navigation(pages).run()


main()
