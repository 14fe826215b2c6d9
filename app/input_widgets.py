"""The input both pages show: its image (test set, upload or drawing) and the rectangles hiding parts of it.

Widgets and their callbacks only; the values live in `state.AppState`, the maths in `hedgekit.interactive.inputs`.
"""
from __future__ import annotations

import hashlib

import numpy as np
import streamlit as st

from hedgekit.data.occlusion import DIGIT_SIZE
from hedgekit.errors import InputError
from hedgekit.interactive import inputs as checked
from hedgekit.viz import interactive as pi
import ui
from cached import class_index, dataset
from state import FULL, N_DIGITS, AppState, Occlusion, widget_value

SHAPE = (DIGIT_SIZE, N_DIGITS * DIGIT_SIZE)
SPLITS = {"test_seen": "seen classes", "test_unseen": "unseen classes (zero-shot)"}
DIGIT_NAMES = ("left (tens)", "right (ones)")


# ------------------------------------------------------------------ the image
def canvas_component():
    """``st_canvas`` of the optional package streamlit-drawable-canvas, or None if it is not installed."""
    try:
        from streamlit_drawable_canvas import st_canvas
    except ImportError:
        return None
    return st_canvas


def _drawing(state: AppState) -> None:
    """The "draw" source: a canvas whose strokes become a 28 x 56 MNIST-style image."""
    st_canvas = canvas_component()
    st.caption("Draw two digits side by side, one in each half (white on black, like MNIST).")
    res = st_canvas(stroke_width=18, stroke_color="#ffffff", background_color="#000000", height=200, width=400,
                    drawing_mode="freedraw", return_image_data=True, key="hk_canvas", update_streamlit=True)
    data = getattr(res, "image_data", None)
    if data is not None and np.asarray(data)[..., :3].max() > 0:
        img = checked.image_from_drawing(data, N_DIGITS)
        state.drawing = ("draw:" + hashlib.sha1(img.tobytes()).hexdigest()[:12], img)


def _upload(state: AppState) -> bool:
    """The "upload" source: a file uploader; a file that is not a valid image is reported and ignored, and the
    report says what is shown instead: the last valid upload, or a test image where there was none. Returns
    whether a file is uploaded (valid or not)."""
    up = st.file_uploader("Upload an image of two digits side by side (PNG/JPEG, 56 x 28 px or larger)",
                          key="hk_upload", help="A 56 x 28 image is used as is; a larger one (e.g. a photo of two "
                          "digits on paper) is cropped, scaled and centred per digit like MNIST.")
    if up is None:
        return False
    data = up.getvalue()
    try:
        decoded = checked.decode_upload(data, SHAPE)
    except InputError as exc:
        shown = "the last valid image" if state.upload is not None else "a test image"
        st.error(f"Cannot use **{up.name}**: {exc}. Showing {shown} instead.")
    else:
        for note in decoded.notes:  # e.g. which frame of a GIF, or that dark-on-white digits were inverted
            st.caption(f"**{up.name}**: {note}.")
        state.upload = ("upload:" + hashlib.sha1(data).hexdigest()[:12], decoded.image)
    return True


def _class_size(state: AppState) -> int:
    """Number of test images of the chosen split and class."""
    index = class_index(state.split)
    return len(index[state.class_choice]) if state.class_choice in index else len(dataset(state.split))


def _pick_random() -> None:
    state = AppState.get()
    state.put("example", int(np.random.default_rng().integers(_class_size(state))))


def _split_changed() -> None:
    state = AppState.get()
    state.put("class_choice", "any")
    state.put("example", 0)


def _class_changed() -> None:
    AppState.get().put("example", 0)


def image_picker() -> tuple[str, np.ndarray, np.ndarray]:
    """Widgets choosing the input; returns (image_key, clean image, starting boxes)."""
    state = AppState.get()
    sources = ["test set", "upload"] + (["draw"] if canvas_component() is not None else [])
    if state.source not in sources:
        state.put("source", "test set")
    state.widget(st.radio, "Image source", "source", sources, horizontal=True,
                 help="A 2-digit test image, your own 56 x 28 pixel image (white digits on black), or a drawing "
                      "(needs the optional package streamlit-drawable-canvas).")
    if state.source == "draw":
        _drawing(state)
        if state.drawing is not None:
            return current_image()
        st.info("Nothing drawn yet: showing a test image.")
    if state.source == "upload":
        uploaded = _upload(state)
        if state.upload is not None:
            return current_image()
        if not uploaded:  # a refused file's error already says a test image is shown
            st.info("No image uploaded yet: showing a test image.")
    c1, c2 = st.columns([3, 2])
    with c1:
        state.widget(st.radio, "Classes", "split", list(SPLITS), format_func=SPLITS.get, horizontal=True,
                     on_change=_split_changed)
    with c2:
        state.widget(st.selectbox, "Class", "class_choice", ["any"] + sorted(class_index(state.split)),
                     format_func=lambda c: "any class" if c == "any" else f"{c:0{N_DIGITS}d}",
                     on_change=_class_changed)
    n = _class_size(state)
    if not 0 <= state.example < n:
        state.put("example", 0)
    c1, c2 = st.columns([3, 2], vertical_alignment="bottom")  # two per row: labels fit at 1280 px
    with c1:
        state.widget(st.number_input, f"Example (0–{n - 1})", "example", min_value=0, max_value=n - 1, step=1)
    with c2:
        st.button("Random", key="hk_random", icon=":material/casino:", on_click=_pick_random, width="stretch",
                  help="A random example (of the chosen class)")
    state.widget(st.toggle, "Start corrupt", "corrupt",
                 help="Start from the test set's occluded twin (HIB App. A): its rectangles become editable.")
    return current_image()


def current_image() -> tuple[str, np.ndarray, np.ndarray]:
    """(image_key, clean image, starting boxes) of the input chosen in the session state (no widgets)."""
    state = AppState.get()
    if state.source == "upload" and state.upload is not None:
        return *state.upload, np.zeros((0, 4), np.int64)
    if state.source == "draw" and state.drawing is not None:
        return *state.drawing, np.zeros((0, 4), np.int64)
    split = state.split if state.split in SPLITS else "test_seen"
    index = class_index(split)
    ds = dataset(split)
    members = index[state.class_choice] if state.class_choice in index else np.arange(len(ds))
    k = int(state.example)
    i = int(members[k if 0 <= k < len(members) else 0])
    boxes = ds.boxes[i] if state.corrupt else np.zeros((0, 4), np.int64)
    boxes = boxes[(boxes[:, 2] > 0) & (boxes[:, 3] > 0)]
    return f"{split}:{i}:{int(state.corrupt)}", ds.images[i], boxes


def on_image(key: str, start_boxes: np.ndarray) -> None:
    """A new input: fresh rectangles (the corrupt twin's, if asked), empty undo history and trails."""
    state = AppState.get()
    if state.image_key == key:
        return
    state.image_key = key
    state.history = []
    state.trails = {}
    state.restore(Occlusion(drawn=tuple(tuple(map(int, b)) for b in start_boxes)))


# ------------------------------------------------------------------ the rectangles, with undo
def commit() -> None:
    """on_change of every occlusion widget: remember the previous occlusion for undo."""
    state = AppState.get()
    state.push_undo()
    state.last = state.occlusion()


def undo() -> None:
    state = AppState.get()
    if state.history:
        state.restore(state.history.pop())
    else:
        state.flash("info", "Nothing to undo.")


def reset() -> None:
    state = AppState.get()
    state.push_undo()
    state.restore(Occlusion())


def hide_digit(j: int) -> None:
    """Black out the whole digit ``j`` (its slider rectangle, full size)."""
    state = AppState.get()
    state.push_undo()
    state.put(f"dig{j}_on", True)
    state.put(f"dig{j}_rows", FULL)
    state.put(f"dig{j}_cols", FULL)
    state.last = state.occlusion()


def selection_key() -> str:
    """Key of the image chart: a new one each time a selection was used (a fresh chart has no selection)."""
    return f"hk_img_sel_{AppState.get().selection_round}"


def on_box_select() -> None:
    """on_select of the image chart: turn the dragged rectangle into an occluding box."""
    selection = widget_value(selection_key())
    state = AppState.get()
    state.selection_round += 1
    try:
        sel = selection["selection"]["box"] if selection else []
    except (KeyError, TypeError):
        sel = []
    if not sel:
        return
    try:
        box = checked.box_from_drag(sel[-1]["x"], sel[-1]["y"], SHAPE)
    except (InputError, KeyError) as exc:
        state.flash("warning", f"That rectangle was not applied: {exc}.")
        return
    state.push_undo()
    state.drawn.append(tuple(map(int, box)))
    state.last = state.occlusion()


def image_chart(image: np.ndarray, boxes: np.ndarray, dark: bool) -> None:
    """The input as the model sees it; dragging a rectangle on it adds an occluding box (`on_box_select`)."""
    st.plotly_chart(pi.image_figure(image, boxes, dark=dark), key=selection_key(), on_select=on_box_select,
                    selection_mode="box", width="stretch",
                    config={"displaylogo": False, "modeBarButtonsToRemove": ["lasso2d", "toImage"]})
    st.caption("Drag a rectangle on the image to black it out (several allowed). Orange outlines mark "
               "what is hidden; the model sees black there.")


def current_boxes() -> tuple[np.ndarray, list[str]]:
    """All occluding boxes now (drawn + per-digit sliders) and notes about ignored ones."""
    state = AppState.get()
    boxes, notes = [list(b) for b in state.drawn], []
    for j in range(N_DIGITS):
        on, rows, cols = state.digit(j)
        if on:
            b = checked.digit_box(j, rows, cols, N_DIGITS)
            if b is None:
                notes.append(f"The rectangle on the {DIGIT_NAMES[j]} digit has zero area (rows or columns "
                             "slider closed), so it hides nothing: widen both ranges.")
            else:
                boxes.append(b.tolist())
    return np.array(boxes, dtype=np.int64).reshape(-1, 4), notes


def occlusion_controls() -> None:
    """Quick buttons, undo/reset, and the per-digit sliders for exact rectangles."""
    state = AppState.get()
    c = st.columns(2) + st.columns(2)  # two per row: labels fit at 1280 px
    c[0].button("Hide left", key="hk_hide0", on_click=hide_digit, args=(0,), width="stretch",
                help="Black out the whole left (tens) digit")
    c[1].button("Hide right", key="hk_hide1", on_click=hide_digit, args=(1,), width="stretch",
                help="Black out the whole right (ones) digit")
    c[2].button("Undo", key="hk_undo", icon=":material/undo:", on_click=undo, width="stretch",
                disabled=not state.history)
    c[3].button("Reset", key="hk_reset", on_click=reset, width="stretch", help="Remove every rectangle")
    with st.expander("Exact rectangles, one per digit (sliders)", expanded=False):
        for j in range(N_DIGITS):
            state.widget(st.toggle, f"Occlude the {DIGIT_NAMES[j]} digit", f"dig{j}_on", on_change=commit)
            a, b = st.columns(2)
            off = not state.digit(j)[0]
            with a:
                state.widget(st.slider, "rows (top → bottom)", f"dig{j}_rows", 0, DIGIT_SIZE, on_change=commit,
                             disabled=off)
            with b:
                state.widget(st.slider, "columns (left → right)", f"dig{j}_cols", 0, DIGIT_SIZE, on_change=commit,
                             disabled=off)


# ------------------------------------------------------------------ the column both pages share
def input_column(title: str) -> tuple:
    """The left column of a page: heading, image picker, a slot for the image, occlusion controls.

    Returns (image key, clean image, current boxes, the empty slot the page draws its image into once
    it knows what to show on it)."""
    st.subheader(title)
    image_key, clean, start_boxes = image_picker()
    on_image(image_key, start_boxes)
    image_slot = st.container()
    ui.show_flashes()
    occlusion_controls()
    boxes, notes = current_boxes()
    for note in notes:
        st.info(note)
    return image_key, clean, boxes, image_slot
