"""Everything one browser session of the hedgekit app keeps, and the only code that touches ``st.session_state``.

`AppState.get()` returns this session's `AppState`, stored under the single session key `AppState.KEY`. Streamlit
keeps session state per browser session and the app has no module-level mutable state, so sessions never interfere.

Settings that widgets edit (model, image choice, sliders...) are fields of `AppState`. The widget of setting
``name`` has the key ``w_<name>`` and is only a view of the field: Streamlit drops the value of a widget that is not
drawn in a run (e.g. while the other page is shown), so `AppState.widget` restores the widget's value from the field
before drawing it and copies the user's edits back into the field; `AppState.put` sets both. Works the same on every
Streamlit version.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import ClassVar

import numpy as np
import streamlit as st

from hedgekit.data.occlusion import DIGIT_SIZE
from hedgekit.interactive.models import DEFAULT_BETA, DEFAULT_MODEL

N_DIGITS = 2  # digits per input image; `AppState` has one set of dig<j>_* settings per digit
WIDGET_PREFIX = "w_"
UNDO_STEPS = 50  # undo steps kept
CLEAN_ETA_ENTRIES = 200  # clean-image etas remembered per session

Box = tuple[int, int, int, int]  # (top, left, height, width) in pixels
Span = tuple[int, int]  # (first, end) pixel row or column within a digit, as the range sliders give it
FULL: Span = (0, DIGIT_SIZE)


@dataclass(frozen=True)
class Occlusion:
    """What hides the input: the rectangles dragged on the image and the per-digit slider rectangles.

    One undo step; ``digits[j]`` is (on, rows, cols) of digit ``j``'s slider rectangle.
    """

    drawn: tuple[Box, ...] = ()
    digits: tuple[tuple[bool, Span, Span], ...] = ((False, FULL, FULL),) * N_DIGITS


@dataclass(slots=True)
class AppState:
    """The values one browser session keeps (see the module docstring); `get` returns this session's instance."""

    KEY: ClassVar[str] = "hk_state"

    # Settings, each edited by the widget with key "w_<field name>" (see `widget`).
    model: str = DEFAULT_MODEL  # the playground's model, a `hedgekit.interactive.models.app_models` key
    color: str = "tens"  # colour the class centroids by their "tens" or "ones" digit
    sigmas: list[float] = field(default_factory=lambda: [1.0, 2.0, 3.0])  # the n-sigma ellipses drawn
    map_view: str = "all classes"  # or "zoom on input"
    show_trail: bool = True
    overlay: bool = True  # the point model's position on the playground's map
    beta: float = DEFAULT_BETA  # KL weight of the HIB models on the compare page
    source: str = "test set"  # where the input comes from: "test set", "upload" or "draw"
    split: str = "test_seen"  # test split of the input ("test_seen" or "test_unseen")
    class_choice: int | str = "any"  # class of the input (a class id of `split`), or "any"
    example: int = 0  # index of the input among the images of that class
    corrupt: bool = False  # start from the test set's occluded twin of the input
    dig0_on: bool = False  # the slider rectangle on the left digit: shown or not, its rows and columns
    dig0_rows: Span = FULL
    dig0_cols: Span = FULL
    dig1_on: bool = False  # the same on the right digit
    dig1_rows: Span = FULL
    dig1_cols: Span = FULL
    clean_pct: int = 20  # Retrieval page: % of the gallery removed, most uncertain first
    bench_method: str = ""  # Benchmark page: the method whose most / least uncertain images are shown

    # Plain values.
    upload: tuple[str, np.ndarray] | None = None  # (image key, image) of the last valid upload
    drawing: tuple[str, np.ndarray] | None = None  # (image key, image) of the last drawing on the canvas
    image_key: str | None = None  # the input that `drawn`, `history` and `trails` belong to
    drawn: list[Box] = field(default_factory=list)  # rectangles dragged on the image
    history: list[Occlusion] = field(default_factory=list)  # undo steps, newest last
    last: Occlusion | None = None  # the occlusion after the last change: the undo step of the next one
    selection_round: int = 0  # part of the image chart's key: a fresh key clears the chart's box selection
    trails: dict[str, list[dict]] = field(default_factory=dict)  # model name -> its trail (`update_trail`)
    clean_eta: dict[str, float] = field(default_factory=dict)  # "model|image key" -> eta of the clean image
    train_approved: set[str] = field(default_factory=set)  # models the user asked to train (compare page)
    flashes: list[tuple[str, str]] = field(default_factory=list)  # (Streamlit function, message) to show once
    retrieval_visited: bool = False  # its first visit switches the input to the unseen classes (its gallery's)

    @classmethod
    def get(cls) -> AppState:
        """This session's state, created with the defaults on the session's first run."""
        state = st.session_state.get(cls.KEY)
        if not isinstance(state, cls):  # first run, or app/state.py was edited and reloaded: keep what it held
            kept = {f.name: getattr(state, f.name) for f in fields(cls) if hasattr(state, f.name)}
            state = st.session_state[cls.KEY] = cls(**kept)
        return state

    # ------------------------------------------------------------------ settings and their widgets
    def bind(self, name: str) -> str:
        """The key of setting ``name``'s widget, its value restored from the setting if Streamlit dropped it."""
        key = WIDGET_PREFIX + name
        if key not in st.session_state:
            st.session_state[key] = getattr(self, name)
        return key

    def widget(self, factory: Callable, label: str, name: str, *args, on_change: Callable[[], None] | None = None,
               **kwargs):
        """Draw ``factory(label, *args, **kwargs)`` (st.toggle, st.slider, ...) as the widget of setting ``name``.

        A user's edit is copied into the setting, then ``on_change()`` runs (if given).
        """
        return factory(label, *args, key=self.bind(name), on_change=_edited, args=(name, on_change), **kwargs)

    def put(self, name: str, value) -> None:
        """Set setting ``name`` and its widget (from a callback, or before the widget is drawn in this run)."""
        setattr(self, name, value)
        st.session_state[WIDGET_PREFIX + name] = value

    # ------------------------------------------------------------------ occlusion and undo
    def digit(self, j: int) -> tuple[bool, Span, Span]:
        """(on, rows, cols) of the slider rectangle on digit ``j``."""
        return getattr(self, f"dig{j}_on"), getattr(self, f"dig{j}_rows"), getattr(self, f"dig{j}_cols")

    def occlusion(self) -> Occlusion:
        """The occlusion now."""
        digits = tuple((bool(on), tuple(rows), tuple(cols)) for on, rows, cols in map(self.digit, range(N_DIGITS)))
        return Occlusion(tuple(tuple(map(int, b)) for b in self.drawn), digits)

    def restore(self, occlusion: Occlusion) -> None:
        """Make ``occlusion`` the occlusion now (sliders included)."""
        self.drawn = list(occlusion.drawn)
        for j, (on, rows, cols) in enumerate(occlusion.digits):
            self.put(f"dig{j}_on", on)
            self.put(f"dig{j}_rows", rows)
            self.put(f"dig{j}_cols", cols)
        self.last = occlusion

    def push_undo(self) -> None:
        """Keep the occlusion before a change as an undo step (the newest `UNDO_STEPS` are kept)."""
        self.history.append(self.last or Occlusion())
        del self.history[:-UNDO_STEPS]

    # ------------------------------------------------------------------ other values
    def clean_eta_for(self, model_name: str, image_key: str, compute: Callable[[], float]) -> float:
        """eta of the clean image ``image_key`` under model ``model_name``: ``compute()``, remembered."""
        key = f"{model_name}|{image_key}"
        if key not in self.clean_eta:
            self.clean_eta[key] = compute()
            if len(self.clean_eta) > CLEAN_ETA_ENTRIES:
                self.clean_eta.pop(next(iter(self.clean_eta)))
        return self.clean_eta[key]

    def flash(self, level: str, message: str) -> None:
        """Queue ``st.<level>(message)`` to show once at the next `take_flashes` (survives a callback's rerun)."""
        self.flashes.append((level, message))

    def take_flashes(self) -> list[tuple[str, str]]:
        """The queued (level, message) pairs, removed from the queue."""
        taken, self.flashes = self.flashes, []
        return taken


def _edited(name: str, then: Callable[[], None] | None) -> None:
    """on_change of setting ``name``'s widget: copy the user's edit into the setting, then run ``then``."""
    setattr(AppState.get(), name, st.session_state[WIDGET_PREFIX + name])
    if then is not None:
        then()


def widget_value(key: str):
    """The value Streamlit keeps for the widget with ``key`` (None if none), e.g. a chart's selection."""
    return st.session_state.get(key)
