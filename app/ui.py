"""Small page helpers shared by the views: the theme, links to the notebooks, one-shot messages."""
from __future__ import annotations

import os

import streamlit as st

from state import AppState

NOTEBOOKS = {
    "02": ("notebooks/02_hib_embeddings.ipynb", "HIB embeddings: ellipses of clean vs corrupt digits (HIB Fig. 3-4)"),
    "03": ("notebooks/03_self_organization.ipynb",
           "how the classes organise by tens and ones digit (HIB sec. 4.2, App. D)"),
    "04": ("notebooks/04_known_unknowns.ipynb", "eta(x) and known unknowns (HIB sec. 2.4, 4.4, Fig. 5)"),
}


def is_dark() -> bool:
    """Whether the browser shows Streamlit's dark theme (False when unknown)."""
    try:
        return st.context.theme.type == "dark"
    except Exception:  # older Streamlit / no browser (AppTest)
        return False


def notebook_links(*which: str) -> str:
    """Markdown lines pointing at the matching notebooks (a URL base can be set by env var)."""
    base = os.environ.get("HEDGEKIT_NOTEBOOK_BASE_URL", "").rstrip("/")
    lines = []
    for n in which:
        path, what = NOTEBOOKS[n]
        link = f"[`{path}`]({base}/{path})" if base else f"`{path}`"
        lines.append(f"- {link}: {what}")
    if not base:
        lines.append("\nOpen them with `jupyter lab notebooks/` from the repository root.")
    return "\n".join(lines)


def delta(change: float, digits: int = 3, suffix: str = "") -> str | None:
    """``st.metric``'s delta text for ``change``, or None (no arrow, no colour) when it rounds to zero."""
    if round(change, digits) == 0:
        return None
    return f"{change:+.{digits}f}{suffix}"


def show_flashes() -> None:
    """Show the messages queued by `AppState.flash` (once)."""
    for level, message in AppState.get().take_flashes():
        getattr(st, level)(message)
